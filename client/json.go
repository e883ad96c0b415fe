package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The JSON shapes of the API's items, for decoding and MarshalJSON. Each has the fields of its domain type, in
// the same order and of the same types, so that a conversion such as
// cdnapi.File(f) copies it without a field-by-field mapping (Go ignores
// struct tags in conversions). File's Project is not in the API's output.
type (
	fileJSON struct {
		ID        string    `json:"id"`
		Project   string    `json:"-"`
		CreatedAt time.Time `json:"created_at"`
		Filename  string    `json:"filename"`
		Bytes     int64     `json:"bytes"`
		Checksum  string    `json:"checksum"`
	}
	assetJSON struct {
		ID          string             `json:"id"`
		CreatedAt   time.Time          `json:"created_at"`
		Path        string             `json:"path"`
		Bytes       int64              `json:"bytes"`
		CacheStatus cdnapi.CacheStatus `json:"cache_status"`
		Region      string             `json:"region"`
	}
	regionJSON struct {
		Code    string        `json:"code"`
		Name    string        `json:"name"`
		Zone    string        `json:"zone"`
		Country string        `json:"country"`
		Status  cdnapi.Status `json:"status"`
	}
	componentJSON struct {
		Name   string        `json:"name"`
		Status cdnapi.Status `json:"status"`
	}
	statusJSON struct {
		Status     cdnapi.Status   `json:"status"`
		Version    string          `json:"version"`
		Region     string          `json:"region"`
		Components []componentJSON `json:"components"`
		UpdatedAt  time.Time       `json:"updated_at"`
	}
)

// MarshalJSON returns item as the API shows it: the JSON of one item of a
// list, or of the status document. A File's Project is left out, as the API
// leaves it out; cdnapi ingest reads the items back.
func MarshalJSON[T cdnapi.File | cdnapi.Asset | cdnapi.Region | cdnapi.StatusDocument](item T) ([]byte, error) {
	switch v := any(item).(type) {
	case cdnapi.File:
		return json.Marshal(fileJSON(v))
	case cdnapi.Asset:
		return json.Marshal(assetJSON(v))
	case cdnapi.Region:
		// Until and Expired are for operators; the API does not show them.
		return json.Marshal(regionJSON{Code: v.Code, Name: v.Name, Zone: v.Zone, Country: v.Country, Status: v.Status})
	case cdnapi.StatusDocument:
		s := statusJSON{Status: v.Status, Version: v.Version, Region: v.Region, UpdatedAt: v.UpdatedAt,
			Components: make([]componentJSON, len(v.Components))}
		for i, c := range v.Components {
			s.Components[i] = componentJSON(c)
		}
		return json.Marshal(s)
	}
	panic("unreachable: T is one of the types above")
}

// listJSON is the list envelope of every list.
type listJSON[W any] struct {
	Object     string  `json:"object"`
	Data       []W     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

var errNoCursor = errors.New(`the list says has_more but gives no next_cursor`)

// decodeList decodes a list envelope whose items have the JSON shape W and
// converts them into T.
func decodeList[W, T any](body []byte, convert func(W) T) (Page[T], error) {
	var l listJSON[W]
	if err := json.Unmarshal(body, &l); err != nil {
		return Page[T]{}, fmt.Errorf("decoding the list: %w", err)
	}
	if l.Object != "list" {
		return Page[T]{}, fmt.Errorf(`decoding the list: object is %q, not "list"`, l.Object)
	}
	p := Page[T]{Items: make([]T, len(l.Data)), HasMore: l.HasMore}
	for i, w := range l.Data {
		p.Items[i] = convert(w)
	}
	if l.HasMore {
		// Without a cursor, a walk would start again from the top.
		if l.NextCursor == nil || *l.NextCursor == "" {
			return Page[T]{}, errNoCursor
		}
		p.NextCursor = *l.NextCursor
	}
	return p, nil
}

func decodeFiles(body []byte) (Page[cdnapi.File], error) {
	return decodeList(body, func(f fileJSON) cdnapi.File { return cdnapi.File(f) })
}

func decodeAssets(body []byte) (Page[cdnapi.Asset], error) {
	return decodeList(body, func(a assetJSON) cdnapi.Asset { return cdnapi.Asset(a) })
}

func decodeRegions(body []byte) (Page[cdnapi.Region], error) {
	return decodeList(body, func(r regionJSON) cdnapi.Region {
		return cdnapi.Region{Code: r.Code, Name: r.Name, Zone: r.Zone, Country: r.Country, Status: r.Status}
	})
}

func decodeStatus(body []byte) (cdnapi.StatusDocument, error) {
	var s statusJSON
	if err := json.Unmarshal(body, &s); err != nil {
		return cdnapi.StatusDocument{}, fmt.Errorf("decoding the status: %w", err)
	}
	d := cdnapi.StatusDocument{Status: s.Status, Version: s.Version, Region: s.Region, UpdatedAt: s.UpdatedAt,
		Components: make([]cdnapi.Component, len(s.Components))}
	for i, c := range s.Components {
		d.Components[i] = cdnapi.Component(c)
	}
	return d, nil
}
