package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/uploads"
)

// UploadAuthConfig configures NewUploadAuth.
type UploadAuthConfig struct {
	Keys      KeyVerifier   // the API keys; required
	Tree      *uploads.Tree // the uploads root, whose folders are checked for links; required
	Logger    *slog.Logger  // internal errors; discarded if nil
	AccessLog *slog.Logger  // one line per request (debug); Logger if nil
	Metrics   *Metrics      // nil records nothing
}

// UploadAuthPath is where the upload server's auth_request asks.
const UploadAuthPath = "/authorize"

// The headers of the contract with the upload server (deploy/nginx/upload.conf).
const (
	// headerProject carries, on a 204, the project whose folder the
	// upload server writes under.
	headerProject = "X-Cdnapi-Project"
	// headerStatus and headerError carry, on a refusal, the status and the
	// JSON body the client is to get: nginx's auth_request passes on only
	// 401 and 403, and never the body.
	headerStatus = "X-Cdnapi-Status"
	headerError  = "X-Cdnapi-Error"
)

// The upload server's errors that do not depend on the request.
var (
	errUploadMethod = cdnapi.Errorf(cdnapi.CodeMethodNotAllowed, "",
		"the upload service takes PUT to write a file and DELETE to remove one")
	errUploadScope = cdnapi.Errorf(cdnapi.CodePermissionDenied, "",
		"this API key cannot upload: uploads need a key with the upload scope (cdnapi keys create --scope upload)")
)

// NewUploadAuth returns the handler that nginx's auth_request asks, before
// the upload server writes or deletes a file (PUT or DELETE): whether the
// request's API key may upload, into which project's folder, and whether
// its path may be written there. It answers 204 with the project, or
// refuses as headerStatus and headerError tell (see the constants).
//
// The request is nginx's subrequest: a GET with the client's Authorization
// header, X-Original-Method and X-Original-URI (the raw request target).
func NewUploadAuth(cfg UploadAuthConfig) http.Handler {
	if cfg.Keys == nil || cfg.Tree == nil {
		panic("httpapi: NewUploadAuth needs Keys and Tree")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AccessLog == nil {
		cfg.AccessLog = cfg.Logger
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+UploadAuthPath, named(UploadAuthPath, authorizeUpload(cfg)))
	h := recoverPanics(mux)
	h = logRequests(cfg.AccessLog, slog.LevelDebug, cfg.Metrics, h)
	return withRequest("upload-auth", cfg.Logger, nil, h)
}

func authorizeUpload(cfg UploadAuthConfig) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.Header.Get("X-Original-Method")
		if method != http.MethodPut && method != http.MethodDelete {
			refuseUpload(w, r, errUploadMethod)
			return
		}
		// The key first: a client without one learns nothing of paths.
		authz := r.Header.Values("Authorization")
		if len(authz) > 1 {
			refuseUpload(w, r, errTwoCredentials)
			return
		}
		if len(authz) == 0 {
			refuseUpload(w, r, errAuthRequired)
			return
		}
		id, err := verifyBearer(cfg.Keys, authz[0], requestTime(r.Context()))
		if err != nil {
			ce := errKeyInvalid
			errors.As(err, &ce)
			refuseUpload(w, r, ce)
			return
		}
		if id.Scope != cdnapi.ScopeUpload {
			refuseUpload(w, r, errUploadScope)
			return
		}
		if st := state(r.Context()); st != nil {
			st.keyID, st.project = id.ID, id.Project
		}
		rel, err := uploads.PathOf(r.Header.Get("X-Original-URI"))
		if err != nil {
			refuseUpload(w, r, cdnapi.Errorf(cdnapi.CodeParameterInvalid, "path", "%s", err.Error()))
			return
		}
		if err := cfg.Tree.Check(id.Project, rel, method == http.MethodDelete); err != nil {
			if !uploads.Refused(err) {
				// The tree could not be read: nginx answers the client
				// 503, as for any answer but 2xx, 401 and 403.
				cfg.Logger.LogAttrs(r.Context(), slog.LevelError, "upload authorization: cannot check the uploads tree",
					slog.String("request_id", loggedRequestID(r.Context())), slog.Any("err", err))
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			refuseUpload(w, r, cdnapi.Errorf(cdnapi.CodeParameterInvalid, "path", "%s", err.Error()))
			return
		}
		w.Header().Set(headerProject, id.Project)
		w.WriteHeader(http.StatusNoContent)
	})
}

// refuseUpload refuses the upload with err, for nginx to answer the client:
// the status and body that err maps to go in headers, since auth_request
// passes on no body, and makes a 500 of any status but 2xx, 401 and 403;
// deploy/nginx/upload.conf turns that 500 back into the 400 of
// X-Cdnapi-Status.
func refuseUpload(w http.ResponseWriter, r *http.Request, err *cdnapi.Error) {
	status := errorStatus[err.Code]
	if err.Code == cdnapi.CodeMethodNotAllowed {
		status = http.StatusBadRequest // the method of the upload, not of this request
	}
	body := appendErrorBody(nil, errorType(status), err.Code, err.Message, err.Param, requestID(r.Context()))
	h := w.Header()
	h.Set(headerStatus, strconv.Itoa(status))
	h.Set(headerError, string(body))
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if status == http.StatusUnauthorized {
		if err == errKeyInvalid {
			h.Set("WWW-Authenticate", `Bearer realm="cdnapi", error="invalid_token"`)
		} else {
			h.Set("WWW-Authenticate", `Bearer realm="cdnapi"`)
		}
	}
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
