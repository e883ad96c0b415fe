package postgres

import "context"

// deleteFiles deletes the files of one project whose IDs are in an array:
// one statement and one round trip for any number of IDs, each looked up
// through the primary key. The project check keeps a caller from deleting
// another project's file by its ID.
const deleteFiles = `DELETE FROM files WHERE project = $1 AND id = ANY($2::text[])`

// DeleteFiles deletes the files of project with the given IDs.
func (b *batcher) DeleteFiles(ctx context.Context, project string, ids []string) error {
	_, err := b.tx.Exec(ctx, deleteFiles, project, ids)
	return err
}
