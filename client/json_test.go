package client_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/client"
)

// MarshalJSON writes what the server writes: a page's items, marshalled
// again and put into the envelope, are the server's body byte for byte.
func TestMarshalJSONIsTheServersOutput(t *testing.T) {
	s := startServer(t, engines[0], nil)
	fill(t, s, 12, 40)
	c := newClient(t, s)
	ctx := t.Context()
	files, err := c.ListFiles(ctx, client.ListFilesParams{Limit: 5})
	must(t, err)
	assets, err := c.ListAssets(ctx, client.ListAssetsParams{Limit: 100})
	must(t, err)
	regions, err := c.ListRegions(ctx)
	must(t, err)
	doc, err := c.Status(ctx)
	must(t, err)

	for _, tt := range []struct {
		url  string
		want []byte
	}{
		{s.api + "/api/v1/files?limit=5", envelope(t, files)},
		{s.edge + "/api/v1/assets?limit=100", envelope(t, assets)},
		{s.edge + "/api/v1/regions", envelope(t, regions)},
		{s.api + "/api/v1/status", append(marshal(t, doc), '\n')},
	} {
		res, err := http.Get(tt.url) // no Accept-Encoding: the plain body
		must(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		must(t, err)
		if !bytes.Equal(body, tt.want) {
			t.Errorf("%s:\nserver %s\nclient %s", tt.url, body, tt.want)
		}
	}
}

func marshal[T cdnapi.File | cdnapi.Asset | cdnapi.Region | cdnapi.StatusDocument](t *testing.T, item T) []byte {
	t.Helper()
	b, err := client.MarshalJSON(item)
	must(t, err)
	return b
}

// envelope puts the items of p, marshalled again, into the list envelope
// as the server writes it.
func envelope[T cdnapi.File | cdnapi.Asset | cdnapi.Region](t *testing.T, p client.Page[T]) []byte {
	b := []byte(`{"object":"list","data":[`)
	for i, it := range p.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, marshal(t, it)...)
	}
	b = append(b, `],"has_more":`...)
	if !p.HasMore {
		return append(b, "false,\"next_cursor\":null}\n"...)
	}
	cursor, _ := json.Marshal(p.NextCursor)
	b = append(b, `true,"next_cursor":`...)
	b = append(b, cursor...)
	return append(b, "}\n"...)
}
