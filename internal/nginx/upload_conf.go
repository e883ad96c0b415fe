package nginx

// uploadTemplate is the upload server's configuration, with [[name]] for
// what Upload.Render fills in. Its comments go to deploy/nginx/upload.conf
// as they are.
const uploadTemplate = `# The cdnapi Upload Service: nginx's WebDAV module takes PUT and DELETE of
# files, each request authorized by cdnapi (serve --upload-auth-addr) through
# auth_request. Include it in the http context (Debian:
# /etc/nginx/sites-available/cdnapi-upload, linked from sites-enabled).
# Rendered by internal/nginx (Upload.Render): change the listen address,
# cdnapi's address, the uploads root and the size limit there, or here with
# the same care. deploy/nginx/README.md says how to install it.
#
#   PUT /a/b.txt     writes ROOT/incoming/PROJECT/a/b.txt, whole or not at
#                    all; cdnapi uploads scans it and moves it to
#                    ROOT/origin/PROJECT/a/b.txt, the listed copy
#   DELETE /a/b.txt  removes ROOT/origin/PROJECT/a/b.txt (and so the file from
#                    the list); a copy still waiting in incoming is not
#                    touched, and is promoted when its scan ends
#
# PROJECT is the project of the API key, as cdnapi answers it: a key writes
# only under its own project. Every error is a JSON body, {"error":{...}},
# and every answer has X-Request-Id: req_ and nginx's $request_id.

log_format cdnapi_upload escape=json
    '{"request_id":"req_$request_id","msec":$msec,"project":"$cdnapi_project",'
    '"request_method":"$request_method","uri":"$uri","status":$status,'
    '"request_length":$request_length,"auth_status":"$cdnapi_auth_status"}';

# cdnapi's upload-auth listener; keepalive saves a connection per request.
upstream cdnapi_upload_auth {
    server [[auth]];
    keepalive 16;
}

# Where a request writes: the project cdnapi answered, checked again here
# with the shape of a project name (cdnapi.ValidProject), so that a wrong
# answer ("", "..", "a/b") writes nowhere: /dev/null is no directory, not
# even for root, and the request ends in a 503. volatile: evaluated where
# used, after the authorization, never kept from before it.
map "$request_method:$cdnapi_project" $cdnapi_upload_root {
    volatile;
    "~^PUT:([A-Za-z0-9][A-Za-z0-9._-]{0,63})$"    [[incoming]];
    "~^DELETE:([A-Za-z0-9][A-Za-z0-9._-]{0,63})$" [[origin]];
    default                                      /dev/null/cdnapi-no-project;
}

# 1 when cdnapi authorized the request but its project was refused above.
map "$cdnapi_auth_status:$cdnapi_upload_root" $cdnapi_project_refused {
    volatile;
    "~^2[0-9][0-9]:/dev/null/" 1;
    default                    "";
}

# The authorizer's error body, if it is one: returned as it is.
map $cdnapi_error $cdnapi_error_json {
    volatile;
    '~^\{"error":\{' $cdnapi_error;
    default         "";
}

# cdnapi's 400 comes to nginx as a 500 (see @cdnapi_500): its body, if any.
map "$cdnapi_status:$cdnapi_error_json" $cdnapi_error_400 {
    volatile;
    "~^400:(.+)$" $1;
    default       "";
}

# Paths a careful client never sends: an encoded slash or backslash, an
# empty segment, a "." or ".." segment, encoded or not. nginx would
# normalise some into another path than the one the client meant (and
# refuses some itself); all of them are a 400.
map $request_uri $cdnapi_path_refused {
    "~*%2f|%5c|//|/(\.|%2e){1,2}(/|\?|$)" 1;
    default                              "";
}

# Headers that only some statuses carry; add_header skips an empty value.
map $status $cdnapi_allow {
    405     "PUT, DELETE";
    default "";
}
map "$status:$sent_http_www_authenticate" $cdnapi_www_authenticate {
    "401:"  'Bearer realm="cdnapi"';
    default "";
}
map $status $cdnapi_retry_after {
    503     5;
    default "";
}

server {
    listen [[listen]];
    server_name _;

    access_log [[log]] cdnapi_upload;
    # Bodies are received here, then renamed into incoming: the same file
    # system, so the rename is atomic.
    client_body_temp_path [[tmp]];
    client_max_body_size [[max]];
    # Every answer with a body is JSON, whatever the path's extension.
    types { }
    default_type application/json;

    add_header X-Request-Id req_$request_id always;
    add_header Cache-Control no-store always;
    add_header Allow $cdnapi_allow always;
    add_header Retry-After $cdnapi_retry_after always;
    # cdnapi's own WWW-Authenticate comes through; this only when it sent none.
    add_header WWW-Authenticate $cdnapi_www_authenticate always;

    # Every error nginx or the WebDAV module makes is answered in JSON by the
    # named location of its status (named: the method stays as sent, in the
    # log too).
    # A URI, not a named location, for 400 and 414: nginx refuses some
    # requests before it has a URI to keep (a ".." above the root), and
    # cannot go to a named location from there; the log says GET then.
    error_page 400 414 = /.cdnapi/error/400;
    error_page 401 = @cdnapi_401;
    error_page 403 = @cdnapi_403;
    error_page 404 = @cdnapi_404;
    error_page 405 = @cdnapi_405;
    error_page 408 = @cdnapi_408;
    error_page 409 = @cdnapi_409;
    error_page 411 = @cdnapi_411;
    error_page 413 = @cdnapi_413;
    error_page 415 = @cdnapi_415;
    error_page 500 502 503 504 507 = @cdnapi_500;

    # 200 while nginx runs, for a load balancer or scripts/cdn status; the
    # status's Upload Service is measured end to end by serve's canary.
    # Not logged.
    location = /health {
        access_log off;
        default_type text/plain;
        return 200 "ok\n";
    }

    location / {
        # Refused before cdnapi is asked.
        if ($request_method !~ ^(PUT|DELETE)$) {
            return 405 '{"error":{"type":"invalid_request_error","code":"method_not_allowed","message":"the upload service takes only PUT and DELETE","request_id":"req_$request_id"}}\n';
        }
        if ($cdnapi_path_refused) {
            return 400 '{"error":{"type":"invalid_request_error","code":"path_invalid","message":"the path has an encoded slash, an empty segment or a dot segment; send the file\'s path as it is","request_id":"req_$request_id"}}\n';
        }
        if ($uri ~ /$) {
            return 409 '{"error":{"type":"invalid_request_error","code":"path_is_folder","message":"a path that ends in / names a folder; PUT and DELETE take a file","request_id":"req_$request_id"}}\n';
        }

        auth_request /.cdnapi/authorize;
        auth_request_set $cdnapi_project $upstream_http_x_cdnapi_project;
        auth_request_set $cdnapi_status $upstream_http_x_cdnapi_status;
        auth_request_set $cdnapi_error $upstream_http_x_cdnapi_error;
        auth_request_set $cdnapi_auth_status $upstream_status;

        root $cdnapi_upload_root;
        dav_methods PUT DELETE;
        create_full_put_path on;
        dav_access user:rw group:rw all:r;
    }

    location = /.cdnapi/authorize {
        internal;
        proxy_pass http://cdnapi_upload_auth/authorize;
        proxy_method GET;
        proxy_http_version 1.1;
        proxy_pass_request_body off;
        # Only what the contract names: no cookies or other headers.
        proxy_pass_request_headers off;
        proxy_set_header Content-Length "";
        proxy_set_header Connection "";
        proxy_set_header Authorization $http_authorization;
        proxy_set_header X-Original-Method $request_method;
        proxy_set_header X-Original-URI $request_uri;
        proxy_set_header X-Request-Id req_$request_id;
        proxy_connect_timeout 2s;
        proxy_send_timeout 5s;
        proxy_read_timeout 5s;
    }

    location = /.cdnapi/error/400 {
        internal;
        return 400 '{"error":{"type":"invalid_request_error","code":"path_invalid","message":"the request or its path is malformed","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_401 {
        if ($cdnapi_error_json) {
            return 401 "$cdnapi_error_json\n";
        }
        return 401 '{"error":{"type":"authentication_error","code":"authentication_required","message":"send an API key with upload scope as Authorization: Bearer KEY","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_403 {
        if ($cdnapi_error_json) {
            return 403 "$cdnapi_error_json\n";
        }
        if ($cdnapi_project_refused) {
            return 503 '{"error":{"type":"api_error","code":"upload_unavailable","message":"the upload service cannot take files now; retry after the number of seconds in the Retry-After header","request_id":"req_$request_id"}}\n';
        }
        return 403 '{"error":{"type":"invalid_request_error","code":"permission_denied","message":"this key may not change this path","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_404 {
        if ($cdnapi_project_refused) {
            return 503 '{"error":{"type":"api_error","code":"upload_unavailable","message":"the upload service cannot take files now; retry after the number of seconds in the Retry-After header","request_id":"req_$request_id"}}\n';
        }
        return 404 '{"error":{"type":"invalid_request_error","code":"not_found","message":"no file at this path","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_405 {
        return 405 '{"error":{"type":"invalid_request_error","code":"method_not_allowed","message":"the upload service takes only PUT and DELETE","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_408 {
        return 408 '{"error":{"type":"invalid_request_error","code":"request_timeout","message":"the request was not sent in time","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_409 {
        if ($cdnapi_project_refused) {
            return 503 '{"error":{"type":"api_error","code":"upload_unavailable","message":"the upload service cannot take files now; retry after the number of seconds in the Retry-After header","request_id":"req_$request_id"}}\n';
        }
        return 409 '{"error":{"type":"invalid_request_error","code":"path_conflict","message":"a folder on the path is a file, or the path is a folder","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_411 {
        return 411 '{"error":{"type":"invalid_request_error","code":"length_required","message":"send the body with Content-Length or chunked","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_413 {
        return 413 '{"error":{"type":"invalid_request_error","code":"file_too_large","message":"the file is larger than the upload service takes ([[max]] bytes)","request_id":"req_$request_id"}}\n';
    }
    location @cdnapi_415 {
        return 415 '{"error":{"type":"invalid_request_error","code":"request_invalid","message":"the upload service does not take a body of this kind","request_id":"req_$request_id"}}\n';
    }
    # auth_request makes a 500 of any answer but 2xx, 401 and 403: cdnapi's
    # 400 (X-Cdnapi-Status), or cdnapi down, failing or slow.
    location @cdnapi_500 {
        if ($cdnapi_error_400) {
            return 400 "$cdnapi_error_400\n";
        }
        return 503 '{"error":{"type":"api_error","code":"upload_unavailable","message":"the upload service cannot take files now; retry after the number of seconds in the Retry-After header","request_id":"req_$request_id"}}\n';
    }
}
`
