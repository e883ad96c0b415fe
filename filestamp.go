package cdnapi

import "context"

// FileStamp is what tells whether a file of the list still matches a file
// on disk, without reading the file: its ID and filename, its size, and its
// created_at in Unix seconds. It is a File without its checksum and project.
type FileStamp struct {
	ID        string
	Filename  string
	Bytes     int64
	CreatedAt int64
}

// FileStampReader reads a project's whole files list at once, narrowly: what
// a sync of an origin (internal/origin) compares with the files of its
// folder, so that a re-run over an unchanged folder reads no more than it
// needs.
type FileStampReader interface {
	// FileStamps calls fn with the stamp of every file of project, in no set
	// order, from one snapshot of the list. It reads where writes go (never
	// a read replica, which may lag behind them), since its caller writes
	// what it learns. It stops at fn's first error and returns it.
	FileStamps(ctx context.Context, project string, fn func(FileStamp) error) error
}
