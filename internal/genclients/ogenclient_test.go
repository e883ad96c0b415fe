package genclients

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ogen-go/ogen/ogenerrors"

	"github.com/cdnapi/cdnapi/internal/genclients/ogenclient"
)

// bearer is the ogen client's source of API keys; with no key, the call
// goes without one, as the document's optional security allows.
type bearer string

func (k bearer) BearerAuth(context.Context, ogenclient.OperationName) (ogenclient.BearerAuth, error) {
	if k == "" {
		return ogenclient.BearerAuth{}, ogenerrors.ErrSkipClientSecurity
	}
	return ogenclient.BearerAuth{Token: string(k)}, nil
}

func ogenCalls(t *testing.T, s *server, hc *http.Client) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	newClient := func(key string) *ogenclient.Client {
		c, err := ogenclient.NewClient(s.api, bearer(key), ogenclient.WithClient(hc))
		must(err)
		return c
	}
	// One client; the edge operations are called with the edge address in
	// their context (ogen's WithServerURL), as the document's path-level
	// servers say.
	c := newClient(s.key)
	edgeURL, err := url.Parse(s.edge)
	must(err)
	api, edge := context.Background(), ogenclient.WithServerURL(context.Background(), edgeURL)

	// Files: a page, the next, HEAD, 304, preflight.
	res, err := c.ListFiles(api, ogenclient.ListFilesParams{Limit: ogenclient.NewOptInt(20)})
	must(err)
	files, ok := res.(*ogenclient.FilePageHeaders)
	if !ok || len(files.Response.Data) != 20 || !files.Response.HasMore || files.Response.NextCursor.Null {
		t.Fatalf("ListFiles: %T %+v", res, res)
	}
	if f := files.Response.Data[0]; f.ID == "" || time.Time(f.CreatedAt).IsZero() || f.Checksum == "" {
		t.Errorf("ListFiles: a file decodes as %+v", f)
	}
	res, err = c.ListFiles(api, ogenclient.ListFilesParams{Limit: ogenclient.NewOptInt(20),
		Cursor: ogenclient.NewOptCursor(ogenclient.Cursor(files.Response.NextCursor.Value))})
	must(err)
	if next, ok := res.(*ogenclient.FilePageHeaders); !ok || next.Response.Data[0].ID == files.Response.Data[0].ID {
		t.Errorf("ListFiles, next page: %T", res)
	}
	headRes, err := c.HeadFiles(api, ogenclient.HeadFilesParams{Limit: ogenclient.NewOptInt(20)})
	must(err)
	if head, ok := headRes.(*ogenclient.FilePageHead); !ok || baseTag(head.ETag) != baseTag(files.ETag) {
		t.Errorf("HeadFiles: %T %+v, want ETag %s", headRes, headRes, files.ETag)
	}
	res, err = c.ListFiles(api, ogenclient.ListFilesParams{Limit: ogenclient.NewOptInt(20), IfNoneMatch: ogenclient.NewOptString(files.ETag)})
	must(err)
	if nm, ok := res.(*ogenclient.FilesNotModified); !ok || nm.ETag != files.ETag {
		t.Errorf("ListFiles with If-None-Match: %T", res)
	}
	preRes, err := c.PreflightFiles(api)
	must(err)
	if pre, ok := preRes.(*ogenclient.Preflight); !ok || !pre.AccessControlAllowMethods.Set {
		t.Errorf("PreflightFiles: %T", preRes)
	}

	// Status, incidents, uptime and the document.
	statusRes, err := c.GetStatus(api, ogenclient.GetStatusParams{})
	must(err)
	if st, ok := statusRes.(*ogenclient.StatusHeaders); !ok || len(st.Response.Components) != 4 || time.Time(st.Response.UpdatedAt).IsZero() {
		t.Errorf("GetStatus: %T", statusRes)
	}
	headStatus, err := c.HeadStatus(api, ogenclient.HeadStatusParams{})
	must(err)
	if h, ok := headStatus.(*ogenclient.StatusHead); !ok || h.CacheControl != "no-store" {
		t.Errorf("HeadStatus: %T", headStatus)
	}
	incRes, err := c.ListIncidents(api, ogenclient.ListIncidentsParams{})
	must(err)
	if inc, ok := incRes.(*ogenclient.IncidentPageHeaders); !ok || inc.Response.Object != "list" {
		t.Errorf("ListIncidents: %T", incRes)
	}
	headInc, err := c.HeadIncidents(api, ogenclient.HeadIncidentsParams{})
	must(err)
	if _, ok := headInc.(*ogenclient.IncidentPageHead); !ok {
		t.Errorf("HeadIncidents: %T", headInc)
	}
	upRes, err := c.GetUptime(api, ogenclient.GetUptimeParams{})
	must(err)
	if up, ok := upRes.(*ogenclient.UptimeHeaders); !ok || len(up.Response.Components) != 4 {
		t.Errorf("GetUptime: %T", upRes)
	}
	headUp, err := c.HeadUptime(api, ogenclient.HeadUptimeParams{})
	must(err)
	if _, ok := headUp.(*ogenclient.UptimeHead); !ok {
		t.Errorf("HeadUptime: %T", headUp)
	}
	// The Atom feed, and the status stream's first event, which the
	// transport ends the body after.
	feedRes, err := c.GetIncidentsFeed(api)
	must(err)
	if feed, ok := feedRes.(*ogenclient.IncidentsFeedHeaders); !ok {
		t.Errorf("GetIncidentsFeed: %T", feedRes)
	} else if b, err := io.ReadAll(feed.Response); err != nil || !strings.HasPrefix(string(b), "<?xml") || feed.ETag == "" {
		t.Errorf("GetIncidentsFeed: ETag %q, %.100s (%v)", feed.ETag, b, err)
	}
	headFeed, err := c.HeadIncidentsFeed(api)
	must(err)
	if _, ok := headFeed.(*ogenclient.IncidentsFeedHead); !ok {
		t.Errorf("HeadIncidentsFeed: %T", headFeed)
	}
	headStream, err := c.HeadStatusStream(api)
	must(err)
	if _, ok := headStream.(*ogenclient.StatusStreamHead); !ok {
		t.Errorf("HeadStatusStream: %T", headStream)
	}
	streamRes, err := c.StreamStatus(api, ogenclient.StreamStatusParams{})
	must(err)
	if stream, ok := streamRes.(*ogenclient.StatusStreamHeaders); !ok {
		t.Errorf("StreamStatus: %T", streamRes)
	} else if b, err := io.ReadAll(stream.Response); err != nil {
		t.Errorf("StreamStatus: %v", err)
	} else if _, data := statusEvent(t, "StreamStatus", b); len(data) > 0 {
		var doc ogenclient.StatusDocument
		if err := doc.UnmarshalJSON(data); err != nil || len(doc.Components) != 4 || time.Time(doc.UpdatedAt).IsZero() {
			t.Errorf("StreamStatus: the event's data decodes as %+v (%v)", doc, err)
		}
	}
	for name, ctx := range map[string]context.Context{"API": api, "edge": edge} {
		docRes, err := c.GetOpenAPIDocument(ctx, ogenclient.GetOpenAPIDocumentParams{})
		must(err)
		doc, ok := docRes.(*ogenclient.DocumentHeaders)
		if !ok || doc.Response.Openapi == "" || len(doc.Response.Paths) == 0 {
			t.Fatalf("GetOpenAPIDocument on the %s address: %T", name, docRes)
		}
		headDoc, err := c.HeadOpenAPIDocument(ctx, ogenclient.HeadOpenAPIDocumentParams{})
		must(err)
		if h, ok := headDoc.(*ogenclient.DocumentHead); !ok || baseTag(h.ETag) != baseTag(doc.ETag) {
			t.Errorf("HeadOpenAPIDocument on the %s address: %T", name, headDoc)
		}
		if _, err := c.PreflightOpenAPIDocument(ctx); err != nil {
			t.Errorf("PreflightOpenAPIDocument on the %s address: %v", name, err)
		}
	}
	for name, call := range map[string]func() (any, error){
		"PreflightStatus":        func() (any, error) { return c.PreflightStatus(api) },
		"PreflightIncidents":     func() (any, error) { return c.PreflightIncidents(api) },
		"PreflightUptime":        func() (any, error) { return c.PreflightUptime(api) },
		"PreflightIncidentsFeed": func() (any, error) { return c.PreflightIncidentsFeed(api) },
		"PreflightStatusStream":  func() (any, error) { return c.PreflightStatusStream(api) },
		"PreflightRegions":       func() (any, error) { return c.PreflightRegions(edge) },
		"PreflightAssets":        func() (any, error) { return c.PreflightAssets(edge) },
	} {
		if got, err := call(); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if _, ok := got.(*ogenclient.Preflight); !ok {
			t.Errorf("%s: %T", name, got)
		}
	}

	// Regions and assets, on the edge address.
	regRes, err := c.ListRegions(edge, ogenclient.ListRegionsParams{})
	must(err)
	regions, ok := regRes.(*ogenclient.RegionPageHeaders)
	if !ok || len(regions.Response.Data) == 0 || !regions.Response.NextCursor.Null {
		t.Fatalf("ListRegions: %T", regRes)
	}
	region := regions.Response.Data[0].Code
	headReg, err := c.HeadRegions(edge, ogenclient.HeadRegionsParams{})
	must(err)
	if h, ok := headReg.(*ogenclient.RegionPageHead); !ok || baseTag(h.ETag) != baseTag(regions.ETag) {
		t.Errorf("HeadRegions: %T", headReg)
	}
	assetsRes, err := c.ListAssets(edge, ogenclient.ListAssetsParams{Region: ogenclient.NewOptRegionCode(region), Limit: ogenclient.NewOptInt(5)})
	must(err)
	assets, ok := assetsRes.(*ogenclient.AssetPageHeaders)
	if !ok {
		t.Fatalf("ListAssets: %T", assetsRes)
	}
	for _, a := range assets.Response.Data {
		if a.Region != region || a.Path == "" || a.CacheStatus == "" {
			t.Errorf("ListAssets: an asset decodes as %+v", a)
		}
	}
	headAssets, err := c.HeadAssets(edge, ogenclient.HeadAssetsParams{Region: ogenclient.NewOptRegionCode(region), Limit: ogenclient.NewOptInt(5)})
	must(err)
	if h, ok := headAssets.(*ogenclient.AssetPageHead); !ok || baseTag(h.ETag) != baseTag(assets.ETag) {
		t.Errorf("HeadAssets: %T", headAssets)
	}

	// Errors: each field of each body decodes.
	assetsRes, err = c.ListAssets(edge, ogenclient.ListAssetsParams{Region: ogenclient.NewOptRegionCode("ZZZ9")})
	must(err)
	if e, ok := assetsRes.(*ogenclient.BadRequestHeaders); !ok {
		t.Errorf("ListAssets of an unknown region: %T", assetsRes)
	} else {
		b := e.Response.Error
		checkError(t, "ListAssets ZZZ9", errorFields{string(b.Type), string(b.Code), string(b.Message), string(b.RequestID), optParam(b.Param)},
			"invalid_request_error", "region_unknown", "region", string(e.XRequestID))
	}
	headAssets, err = c.HeadAssets(edge, ogenclient.HeadAssetsParams{Region: ogenclient.NewOptRegionCode("ZZZ9")})
	must(err)
	if h, ok := headAssets.(*ogenclient.BadRequestHead); !ok || h.XRequestID == "" {
		t.Errorf("HeadAssets of an unknown region: %T", headAssets)
	}
	res, err = c.ListFiles(api, ogenclient.ListFilesParams{Cursor: ogenclient.NewOptCursor("AAAA")})
	must(err)
	if e, ok := res.(*ogenclient.BadRequestHeaders); !ok {
		t.Errorf("ListFiles with a forged cursor: %T", res)
	} else {
		b := e.Response.Error
		checkError(t, "ListFiles AAAA", errorFields{string(b.Type), string(b.Code), string(b.Message), string(b.RequestID), optParam(b.Param)},
			"invalid_request_error", "cursor_invalid", "cursor", string(e.XRequestID))
	}
	for _, tc := range []struct{ key, code string }{{"", "authentication_required"}, {"cdk_unknown", "api_key_invalid"}} {
		anon := newClient(tc.key)
		res, err := anon.ListFiles(api, ogenclient.ListFilesParams{})
		must(err)
		if e, ok := res.(*ogenclient.UnauthorizedHeaders); !ok {
			t.Errorf("ListFiles with key %q: %T", tc.key, res)
		} else {
			b := e.Response.Error
			checkError(t, "ListFiles "+tc.key, errorFields{string(b.Type), string(b.Code), string(b.Message), string(b.RequestID), optParam(b.Param)},
				"authentication_error", tc.code, "", string(e.XRequestID))
		}
		head, err := anon.HeadRegions(edge, ogenclient.HeadRegionsParams{})
		must(err)
		if h, ok := head.(*ogenclient.UnauthorizedHead); !ok || h.WWWAuthenticate == "" {
			t.Errorf("HeadRegions with key %q: %T", tc.key, head)
		}
	}
	// A key whose scope may not list: 403.
	uploader := newClient(s.upload)
	res, err = uploader.ListFiles(api, ogenclient.ListFilesParams{})
	must(err)
	if e, ok := res.(*ogenclient.ForbiddenHeaders); !ok {
		t.Errorf("ListFiles with an upload key: %T", res)
	} else {
		b := e.Response.Error
		checkError(t, "ListFiles upload key", errorFields{string(b.Type), string(b.Code), string(b.Message), string(b.RequestID), optParam(b.Param)},
			"invalid_request_error", "permission_denied", "", string(e.XRequestID))
	}
	deniedHead, err := uploader.HeadRegions(edge, ogenclient.HeadRegionsParams{})
	must(err)
	if h, ok := deniedHead.(*ogenclient.ForbiddenHead); !ok || h.XRequestID == "" {
		t.Errorf("HeadRegions with an upload key: %T", deniedHead)
	}
	// The wrong address: 404, with a message that names the right one.
	res, err = c.ListFiles(edge, ogenclient.ListFilesParams{})
	must(err)
	if e, ok := res.(*ogenclient.NotFoundHeaders); !ok {
		t.Errorf("ListFiles on the edge: %T", res)
	} else {
		b := e.Response.Error
		checkError(t, "ListFiles on the edge", errorFields{string(b.Type), string(b.Code), string(b.Message), string(b.RequestID), optParam(b.Param)},
			"invalid_request_error", "not_found", "", string(e.XRequestID))
	}
	headReg, err = c.HeadRegions(api, ogenclient.HeadRegionsParams{})
	must(err)
	if _, ok := headReg.(*ogenclient.NotFoundHead); !ok {
		t.Errorf("HeadRegions on the API address: %T", headReg)
	}
	preAssets, err := c.PreflightAssets(api)
	must(err)
	if _, ok := preAssets.(*ogenclient.NotFoundHeaders); !ok {
		t.Errorf("PreflightAssets on the API address: %T", preAssets)
	}
	// 429: the spare key's bucket runs dry.
	spare := newClient(s.spare)
	for i := 0; ; i++ {
		res, err := spare.ListRegions(edge, ogenclient.ListRegionsParams{})
		must(err)
		if e, ok := res.(*ogenclient.TooManyRequestsHeaders); ok {
			b := e.Response.Error
			checkError(t, "ListRegions over the limit", errorFields{string(b.Type), string(b.Code), string(b.Message), string(b.RequestID), optParam(b.Param)},
				"rate_limit_error", "rate_limited", "", string(e.XRequestID))
			if !e.RateLimit.Set {
				t.Errorf("429 without RateLimit")
			}
			break
		}
		if _, ok := res.(*ogenclient.RegionPageHeaders); !ok || i == 1000 {
			t.Fatalf("ListRegions call %d: %T, and no 429", i, res)
		}
	}
}

func optParam(p ogenclient.OptErrorParam) *string {
	if !p.Set {
		return nil
	}
	s := string(p.Value)
	return &s
}
