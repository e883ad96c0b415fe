package ingest

import (
	"context"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Kind is the kind of record an ingest reads: one of Files, Assets and
// Regions.
type Kind string

// The kinds of records, named as on the command line.
const (
	Files   Kind = "files"
	Assets  Kind = "assets"
	Regions Kind = "regions"
)

// Kinds lists every Kind.
var Kinds = []Kind{Files, Assets, Regions}

// format is how one kind of record is read from a line, checked and
// written.
type format[T any] struct {
	schema
	// decode converts the members that decodeLine found into a record. It
	// checks the JSON types; the Validator checks the rest.
	decode func(vals []rawValue, defaultProject string) (T, error)
	check  func(v *Validator, rec *T) error
	put    func(w cdnapi.Writer) func(context.Context, []T) error
}

// parse reads one line into a record, which it does not check. vals is
// scratch space with a slot per field.
func (f *format[T]) parse(line []byte, vals []rawValue, defaultProject string) (T, error) {
	if err := f.decodeLine(line, vals); err != nil {
		var zero T
		return zero, err
	}
	return f.decode(vals, defaultProject)
}

// The fields of each format, in the order of the API output.
const (
	fileID = iota
	fileCreatedAt
	fileFilename
	fileBytes
	fileChecksum
	fileProject
)

var fileFormat = format[cdnapi.File]{
	schema: schema{
		noun:     "file",
		fields:   []string{"id", "created_at", "filename", "bytes", "checksum", "project"},
		optional: 1 << fileProject,
		want:     []string{wantFileID, wantTime, wantText, wantBytes, wantChecksum, wantProject},
	},
	decode: func(vals []rawValue, project string) (cdnapi.File, error) {
		var f cdnapi.File
		var ok bool
		if f.ID, ok = vals[fileID].str(); !ok {
			return f, &FieldError{Field: "id", Want: wantFileID}
		}
		if vals[fileProject].kind != 0 {
			if f.Project, ok = vals[fileProject].str(); !ok {
				return f, &FieldError{Field: "project", Want: wantProject}
			}
		} else {
			f.Project = project
		}
		if f.CreatedAt, ok = timeValue(vals[fileCreatedAt]); !ok {
			return f, &FieldError{Field: "created_at", Want: wantTime}
		}
		if f.Filename, ok = vals[fileFilename].str(); !ok {
			return f, &FieldError{Field: "filename", Want: wantText}
		}
		if f.Bytes, ok = vals[fileBytes].int64(); !ok {
			return f, &FieldError{Field: "bytes", Want: wantBytes}
		}
		if f.Checksum, ok = vals[fileChecksum].str(); !ok {
			return f, &FieldError{Field: "checksum", Want: wantChecksum}
		}
		return f, nil
	},
	check: (*Validator).File,
	put:   func(w cdnapi.Writer) func(context.Context, []cdnapi.File) error { return w.PutFiles },
}

const (
	assetID = iota
	assetCreatedAt
	assetPath
	assetBytes
	assetCacheStatus
	assetRegion
)

// cacheStatuses are the valid cache results as strings, for rawValue.intern.
var cacheStatuses = func() []string {
	s := make([]string, len(cdnapi.CacheStatuses))
	for i, c := range cdnapi.CacheStatuses {
		s[i] = string(c)
	}
	return s
}()

var assetFormat = format[cdnapi.Asset]{
	schema: schema{
		noun:   "asset",
		fields: []string{"id", "created_at", "path", "bytes", "cache_status", "region"},
		want:   []string{wantAssetID, wantTime, wantPath, wantBytes, wantCacheStatus, wantRegionCode},
	},
	decode: func(vals []rawValue, _ string) (cdnapi.Asset, error) {
		var a cdnapi.Asset
		var ok bool
		if a.ID, ok = vals[assetID].str(); !ok {
			return a, &FieldError{Field: "id", Want: wantAssetID}
		}
		if a.CreatedAt, ok = timeValue(vals[assetCreatedAt]); !ok {
			return a, &FieldError{Field: "created_at", Want: wantTime}
		}
		if a.Path, ok = vals[assetPath].str(); !ok {
			return a, &FieldError{Field: "path", Want: wantPath}
		}
		if a.Bytes, ok = vals[assetBytes].int64(); !ok {
			return a, &FieldError{Field: "bytes", Want: wantBytes}
		}
		status, ok := vals[assetCacheStatus].intern(cacheStatuses)
		if !ok {
			return a, &FieldError{Field: "cache_status", Want: wantCacheStatus}
		}
		a.CacheStatus = cdnapi.CacheStatus(status)
		if a.Region, ok = vals[assetRegion].str(); !ok {
			return a, &FieldError{Field: "region", Want: wantRegionCode}
		}
		return a, nil
	},
	check: (*Validator).Asset,
	put:   func(w cdnapi.Writer) func(context.Context, []cdnapi.Asset) error { return w.PutAssets },
}

const (
	regionCode = iota
	regionName
	regionZone
	regionCountry
	regionStatus
)

var regionFormat = format[cdnapi.Region]{
	schema: schema{
		noun:   "region",
		fields: []string{"code", "name", "zone", "country", "status"},
		want:   []string{wantRegionCode, wantText, wantZone, wantCountry, wantStatus},
	},
	decode: func(vals []rawValue, _ string) (cdnapi.Region, error) {
		var r cdnapi.Region
		var ok bool
		fields := []*string{&r.Code, &r.Name, &r.Zone, &r.Country}
		wants := []string{wantRegionCode, wantText, wantZone, wantCountry}
		names := []string{"code", "name", "zone", "country"}
		for i, dst := range fields {
			if *dst, ok = vals[i].str(); !ok {
				return r, &FieldError{Field: names[i], Want: wants[i]}
			}
		}
		status, ok := vals[regionStatus].str()
		if !ok {
			return r, &FieldError{Field: "status", Want: wantStatus}
		}
		r.Status = cdnapi.Status(status)
		return r, nil
	},
	check: (*Validator).Region,
	put:   func(w cdnapi.Writer) func(context.Context, []cdnapi.Region) error { return w.PutRegions },
}

// timeValue returns v as a time if it is a string of the one shape API.md
// allows.
func timeValue(v rawValue) (t time.Time, ok bool) {
	if v.kind != kindString || v.escaped {
		return t, false
	}
	return parseTime(string(v.raw[1 : len(v.raw)-1]))
}
