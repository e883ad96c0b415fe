package genclients

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/internal/genclients/oapiclient"
)

// errorFields is what every error body holds, whatever its status.
type errorFields struct {
	typ, code, message, requestID string
	param                         *string
}

// checkError fails t unless e is the error the call should get, its
// request_id the X-Request-Id of the answer.
func checkError(t *testing.T, call string, e errorFields, typ, code, param, headerID string) {
	t.Helper()
	if e.typ != typ || e.code != code {
		t.Errorf("%s: error %s/%s, want %s/%s", call, e.typ, e.code, typ, code)
	}
	if e.message == "" || !strings.HasSuffix(e.message, ".") && !strings.Contains(e.message, " ") {
		t.Errorf("%s: message %q is not a sentence", call, e.message)
	}
	if e.requestID == "" || e.requestID != headerID {
		t.Errorf("%s: request_id %q, X-Request-Id %q", call, e.requestID, headerID)
	}
	switch {
	case param == "" && e.param != nil:
		t.Errorf("%s: param %q, want none", call, *e.param)
	case param != "" && (e.param == nil || *e.param != param):
		t.Errorf("%s: param %v, want %q", call, e.param, param)
	}
}

// baseTag returns the ETag of the identity coding of the body that tag
// names. Go's transport asks for gzip on GET and not on HEAD, and each coding
// of a body has its own tag: the HEAD of a page answers the identity one.
func baseTag(tag string) string {
	for _, coding := range []string{"gzip", "zstd"} {
		if t, ok := strings.CutSuffix(tag, "-"+coding+`"`); ok {
			return t + `"`
		}
	}
	return tag
}

func ptr[T any](v T) *T { return &v }

// TestGeneratedClients calls every operation of the document through the
// clients that oapi-codegen and ogen generated from it, with their default
// settings, against a real server: each answer, success, HEAD, 304 or error,
// must decode into the generated types with every field filled in.
func TestGeneratedClients(t *testing.T) {
	s := startServer(t)
	t.Run("oapi-codegen", func(t *testing.T) {
		c := newCalls()
		oapiCodegenCalls(t, s, c.client())
		c.checkEveryOperation(t, s, "oapi-codegen")
	})
	t.Run("ogen", func(t *testing.T) {
		c := newCalls()
		ogenCalls(t, s, c.client())
		c.checkEveryOperation(t, s, "ogen")
	})
}

// statusEvent returns the ID and the data of the first event of a status
// stream's body, and fails t unless it is an event "status".
func statusEvent(t *testing.T, call string, body []byte) (id string, data []byte) {
	t.Helper()
	var event string
	for line := range strings.SplitSeq(string(body), "\n") {
		switch k, v, _ := strings.Cut(line, ": "); k {
		case "id":
			id = v
		case "event":
			event = v
		case "data":
			data = []byte(v)
		}
	}
	if event != "status" || id == "" || len(data) == 0 {
		t.Errorf("%s: the first event is %q", call, body)
	}
	return id, data
}

func oapiCodegenCalls(t *testing.T, s *server, hc *http.Client) {
	ctx := context.Background()
	bearer := func(key string) oapiclient.ClientOption {
		return oapiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			if key != "" {
				r.Header.Set("Authorization", "Bearer "+key)
			}
			return nil
		})
	}
	newClient := func(base, key string) *oapiclient.ClientWithResponses {
		c, err := oapiclient.NewClientWithResponses(base, bearer(key), oapiclient.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// One client per address: oapi-codegen takes no servers from the
	// document, so the edge operations are called on a client of the edge.
	api, edge := newClient(s.api, s.key), newClient(s.edge, s.key)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Files: a page, the next, HEAD, 304, preflight.
	files, err := api.ListFilesWithResponse(ctx, &oapiclient.ListFilesParams{Limit: ptr(20)})
	must(err)
	if files.JSON200 == nil || len(files.JSON200.Data) != 20 || !files.JSON200.HasMore || files.JSON200.NextCursor == nil {
		t.Fatalf("ListFiles: %d %s", files.StatusCode(), files.Body)
	}
	if f := files.JSON200.Data[0]; f.Id == "" || f.CreatedAt.IsZero() || f.Checksum == "" || f.Bytes < 0 {
		t.Errorf("ListFiles: a file decodes as %+v", f)
	}
	next, err := api.ListFilesWithResponse(ctx, &oapiclient.ListFilesParams{Limit: ptr(20), Cursor: files.JSON200.NextCursor})
	must(err)
	if next.JSON200 == nil || next.JSON200.Data[0].Id == files.JSON200.Data[0].Id {
		t.Errorf("ListFiles, next page: %d %s", next.StatusCode(), next.Body)
	}
	etag := files.Headers200.ETag
	head, err := api.HeadFilesWithResponse(ctx, &oapiclient.HeadFilesParams{Limit: ptr(20)})
	must(err)
	if head.Headers200 == nil || baseTag(head.Headers200.ETag) != baseTag(etag) || len(head.Body) != 0 {
		t.Errorf("HeadFiles: %d, headers %+v, want ETag %s", head.StatusCode(), head.Headers200, etag)
	}
	unchanged, err := api.ListFilesWithResponse(ctx, &oapiclient.ListFilesParams{Limit: ptr(20), IfNoneMatch: &etag})
	must(err)
	if unchanged.Headers304 == nil || unchanged.Headers304.ETag != etag {
		t.Errorf("ListFiles with If-None-Match: %d", unchanged.StatusCode())
	}
	pre, err := api.PreflightFilesWithResponse(ctx)
	must(err)
	if pre.Headers204 == nil || pre.Headers204.AccessControlAllowMethods == nil {
		t.Errorf("PreflightFiles: %d", pre.StatusCode())
	}

	// Status, incidents, uptime and the document.
	status, err := api.GetStatusWithResponse(ctx, nil)
	must(err)
	if status.JSON200 == nil || len(status.JSON200.Components) != 4 || status.JSON200.UpdatedAt.IsZero() {
		t.Errorf("GetStatus: %d %s", status.StatusCode(), status.Body)
	}
	headStatus, err := api.HeadStatusWithResponse(ctx, nil)
	must(err)
	if headStatus.Headers200 == nil || headStatus.Headers200.CacheControl != "no-store" {
		t.Errorf("HeadStatus: %d", headStatus.StatusCode())
	}
	incidents, err := api.ListIncidentsWithResponse(ctx, &oapiclient.ListIncidentsParams{})
	must(err)
	if incidents.JSON200 == nil || incidents.JSON200.Object != "list" {
		t.Errorf("ListIncidents: %d %s", incidents.StatusCode(), incidents.Body)
	}
	headIncidents, err := api.HeadIncidentsWithResponse(ctx, &oapiclient.HeadIncidentsParams{})
	must(err)
	if headIncidents.Headers200 == nil {
		t.Errorf("HeadIncidents: %d", headIncidents.StatusCode())
	}
	// The Atom feed of incidents, and the headers of the status stream (its
	// GET never ends, so a client that reads whole answers cannot call it;
	// cmd/cdnapi's stream tests read it as browsers do).
	feed, err := api.GetIncidentsFeedWithResponse(ctx)
	must(err)
	if feed.StatusCode() != http.StatusOK || !strings.HasPrefix(string(feed.Body), "<?xml") {
		t.Errorf("GetIncidentsFeed: %d %.100s", feed.StatusCode(), feed.Body)
	}
	headFeed, err := api.HeadIncidentsFeedWithResponse(ctx)
	must(err)
	if headFeed.Headers200 == nil || len(headFeed.Body) != 0 {
		t.Errorf("HeadIncidentsFeed: %d", headFeed.StatusCode())
	}
	headStream, err := api.HeadStatusStreamWithResponse(ctx)
	must(err)
	if headStream.Headers200 == nil || len(headStream.Body) != 0 {
		t.Errorf("HeadStatusStream: %d", headStream.StatusCode())
	}
	// The stream's first event, which the transport ends the body after.
	stream, err := api.StreamStatusWithResponse(ctx, nil)
	must(err)
	if stream.StatusCode() != http.StatusOK {
		t.Errorf("StreamStatus: %d %s", stream.StatusCode(), stream.Body)
	} else if _, data := statusEvent(t, "StreamStatus", stream.Body); len(data) > 0 {
		var doc oapiclient.StatusDocument
		if err := json.Unmarshal(data, &doc); err != nil || len(doc.Components) != 4 || doc.UpdatedAt.IsZero() {
			t.Errorf("StreamStatus: the event's data decodes as %+v (%v)", doc, err)
		}
	}
	uptime, err := api.GetUptimeWithResponse(ctx, nil)
	must(err)
	if uptime.JSON200 == nil || len(uptime.JSON200.Components) != 4 {
		t.Errorf("GetUptime: %d %s", uptime.StatusCode(), uptime.Body)
	}
	headUptime, err := api.HeadUptimeWithResponse(ctx, nil)
	must(err)
	if headUptime.Headers200 == nil {
		t.Errorf("HeadUptime: %d", headUptime.StatusCode())
	}
	for name, c := range map[string]*oapiclient.ClientWithResponses{"API": api, "edge": edge} {
		doc, err := c.GetOpenAPIDocumentWithResponse(ctx, nil)
		must(err)
		if doc.JSON200 == nil || doc.JSON200.Openapi == "" || len(doc.JSON200.Paths) == 0 {
			t.Errorf("GetOpenAPIDocument on the %s address: %d", name, doc.StatusCode())
		}
		headDoc, err := c.HeadOpenAPIDocumentWithResponse(ctx, nil)
		must(err)
		if headDoc.Headers200 == nil || baseTag(headDoc.Headers200.ETag) != baseTag(doc.Headers200.ETag) {
			t.Errorf("HeadOpenAPIDocument on the %s address: %d", name, headDoc.StatusCode())
		}
		preDoc, err := c.PreflightOpenAPIDocumentWithResponse(ctx)
		must(err)
		if preDoc.StatusCode() != http.StatusNoContent {
			t.Errorf("PreflightOpenAPIDocument on the %s address: %d", name, preDoc.StatusCode())
		}
	}
	for name, call := range map[string]func() (int, error){
		"PreflightStatus": func() (int, error) { r, err := api.PreflightStatusWithResponse(ctx); return code(r, err) },
		"PreflightIncidents": func() (int, error) {
			r, err := api.PreflightIncidentsWithResponse(ctx)
			return code(r, err)
		},
		"PreflightUptime": func() (int, error) { r, err := api.PreflightUptimeWithResponse(ctx); return code(r, err) },
		"PreflightIncidentsFeed": func() (int, error) {
			r, err := api.PreflightIncidentsFeedWithResponse(ctx)
			return code(r, err)
		},
		"PreflightStatusStream": func() (int, error) {
			r, err := api.PreflightStatusStreamWithResponse(ctx)
			return code(r, err)
		},
		"PreflightRegions": func() (int, error) { r, err := edge.PreflightRegionsWithResponse(ctx); return code(r, err) },
		"PreflightAssets":  func() (int, error) { r, err := edge.PreflightAssetsWithResponse(ctx); return code(r, err) },
	} {
		if got, err := call(); err != nil || got != http.StatusNoContent {
			t.Errorf("%s: %d %v", name, got, err)
		}
	}

	// Regions and assets, on the edge address.
	regions, err := edge.ListRegionsWithResponse(ctx, nil)
	must(err)
	if regions.JSON200 == nil || len(regions.JSON200.Data) == 0 || regions.JSON200.NextCursor != nil {
		t.Fatalf("ListRegions: %d %s", regions.StatusCode(), regions.Body)
	}
	region := regions.JSON200.Data[0].Code
	headRegions, err := edge.HeadRegionsWithResponse(ctx, nil)
	must(err)
	if headRegions.Headers200 == nil || baseTag(headRegions.Headers200.ETag) != baseTag(regions.Headers200.ETag) {
		t.Errorf("HeadRegions: %d", headRegions.StatusCode())
	}
	assets, err := edge.ListAssetsWithResponse(ctx, &oapiclient.ListAssetsParams{Region: &region, Limit: ptr(5)})
	must(err)
	if assets.JSON200 == nil {
		t.Fatalf("ListAssets: %d %s", assets.StatusCode(), assets.Body)
	}
	for _, a := range assets.JSON200.Data {
		if a.Region != region || a.Path == "" || a.CacheStatus == "" {
			t.Errorf("ListAssets: an asset decodes as %+v", a)
		}
	}
	headAssets, err := edge.HeadAssetsWithResponse(ctx, &oapiclient.HeadAssetsParams{Region: &region, Limit: ptr(5)})
	must(err)
	if headAssets.Headers200 == nil || baseTag(headAssets.Headers200.ETag) != baseTag(assets.Headers200.ETag) {
		t.Errorf("HeadAssets: %d", headAssets.StatusCode())
	}

	// Errors: each field of each body decodes.
	unknown, err := edge.ListAssetsWithResponse(ctx, &oapiclient.ListAssetsParams{Region: ptr("ZZZ9")})
	must(err)
	if e := unknown.JSON400; e == nil {
		t.Errorf("ListAssets of an unknown region: %d %s", unknown.StatusCode(), unknown.Body)
	} else {
		checkError(t, "ListAssets ZZZ9", errorFields{string(e.Error.Type), string(e.Error.Code), e.Error.Message, e.Error.RequestId, e.Error.Param},
			"invalid_request_error", "region_unknown", "region", unknown.Headers400.XRequestId)
	}
	headUnknown, err := edge.HeadAssetsWithResponse(ctx, &oapiclient.HeadAssetsParams{Region: ptr("ZZZ9")})
	must(err)
	if headUnknown.Headers400 == nil || headUnknown.Headers400.XRequestId == "" || len(headUnknown.Body) != 0 {
		t.Errorf("HeadAssets of an unknown region: %d", headUnknown.StatusCode())
	}
	badCursor, err := api.ListFilesWithResponse(ctx, &oapiclient.ListFilesParams{Cursor: ptr("AAAA")})
	must(err)
	if e := badCursor.JSON400; e == nil {
		t.Errorf("ListFiles with a forged cursor: %d %s", badCursor.StatusCode(), badCursor.Body)
	} else {
		checkError(t, "ListFiles AAAA", errorFields{string(e.Error.Type), string(e.Error.Code), e.Error.Message, e.Error.RequestId, e.Error.Param},
			"invalid_request_error", "cursor_invalid", "cursor", badCursor.Headers400.XRequestId)
	}
	for _, tc := range []struct{ key, code string }{{"", "authentication_required"}, {"cdk_unknown", "api_key_invalid"}} {
		res, err := newClient(s.api, tc.key).ListFilesWithResponse(ctx, &oapiclient.ListFilesParams{})
		must(err)
		if e := res.JSON401; e == nil {
			t.Errorf("ListFiles with key %q: %d %s", tc.key, res.StatusCode(), res.Body)
		} else {
			checkError(t, "ListFiles "+tc.key, errorFields{string(e.Error.Type), string(e.Error.Code), e.Error.Message, e.Error.RequestId, e.Error.Param},
				"authentication_error", tc.code, "", res.Headers401.XRequestId)
		}
		head, err := newClient(s.edge, tc.key).HeadRegionsWithResponse(ctx, nil)
		must(err)
		if head.Headers401 == nil || head.Headers401.WWWAuthenticate == "" {
			t.Errorf("HeadRegions with key %q: %d", tc.key, head.StatusCode())
		}
	}
	// A key whose scope may not list: 403.
	denied, err := newClient(s.api, s.upload).ListFilesWithResponse(ctx, &oapiclient.ListFilesParams{})
	must(err)
	if e := denied.JSON403; e == nil {
		t.Errorf("ListFiles with an upload key: %d %s", denied.StatusCode(), denied.Body)
	} else {
		checkError(t, "ListFiles upload key", errorFields{string(e.Error.Type), string(e.Error.Code), e.Error.Message, e.Error.RequestId, e.Error.Param},
			"invalid_request_error", "permission_denied", "", denied.Headers403.XRequestId)
	}
	deniedHead, err := newClient(s.edge, s.upload).HeadRegionsWithResponse(ctx, nil)
	must(err)
	if deniedHead.Headers403 == nil || deniedHead.Headers403.XRequestId == "" || len(deniedHead.Body) != 0 {
		t.Errorf("HeadRegions with an upload key: %d", deniedHead.StatusCode())
	}
	// The wrong address: 404, with a message that names the right one.
	wrong, err := edge.ListFilesWithResponse(ctx, &oapiclient.ListFilesParams{})
	must(err)
	if e := wrong.JSON404; e == nil {
		t.Errorf("ListFiles on the edge: %d %s", wrong.StatusCode(), wrong.Body)
	} else {
		checkError(t, "ListFiles on the edge", errorFields{string(e.Error.Type), string(e.Error.Code), e.Error.Message, e.Error.RequestId, e.Error.Param},
			"invalid_request_error", "not_found", "", wrong.Headers404.XRequestId)
	}
	wrongHead, err := api.HeadRegionsWithResponse(ctx, nil)
	must(err)
	if wrongHead.Headers404 == nil {
		t.Errorf("HeadRegions on the API address: %d", wrongHead.StatusCode())
	}
	wrongPre, err := api.PreflightAssetsWithResponse(ctx)
	must(err)
	if wrongPre.JSON404 == nil {
		t.Errorf("PreflightAssets on the API address: %d", wrongPre.StatusCode())
	}
	// 429: the spare key's bucket runs dry.
	spare := newClient(s.edge, s.spare)
	for i := 0; ; i++ {
		res, err := spare.ListRegionsWithResponse(ctx, nil)
		must(err)
		if e := res.JSON429; e != nil {
			checkError(t, "ListRegions over the limit", errorFields{string(e.Error.Type), string(e.Error.Code), e.Error.Message, e.Error.RequestId, e.Error.Param},
				"rate_limit_error", "rate_limited", "", res.Headers429.XRequestId)
			if res.Headers429.RateLimit == nil {
				t.Errorf("429 without RateLimit")
			}
			break
		}
		if res.StatusCode() != http.StatusOK || i == 1000 {
			t.Fatalf("ListRegions call %d: %d, and no 429", i, res.StatusCode())
		}
	}
}

// code returns the status of a generated response.
func code(r interface{ StatusCode() int }, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return r.StatusCode(), nil
}
