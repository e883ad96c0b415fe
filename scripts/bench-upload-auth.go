//go:build ignore

// bench-upload-auth.go is the helper of scripts/bench-upload-auth:
//
//	bench-upload-auth serve DIR PORT [AUTH]
//
// starts two upload servers (internal/nginx's Upload) over the uploads root
// DIR/uploads: "auth" on 127.0.0.1:PORT, as shipped, asking the authorizer
// at AUTH; "noauth" on PORT+1, the same configuration without its
// auth_request, every request of project "bench". Without AUTH it also
// serves, on PORT+2, a minimal authorizer of the contract, which answers
// 204 with X-Cdnapi-Project: bench to any Bearer key. It prints "ready" and
// runs until stdin closes.
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cdnapi/cdnapi/internal/nginx"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 4 || os.Args[1] != "serve" {
		log.Fatal("usage: bench-upload-auth serve DIR PORT [AUTH]")
	}
	dir := os.Args[2]
	port, err := strconv.Atoi(os.Args[3])
	if err != nil {
		log.Fatal(err)
	}
	addr := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	auth := addr(port + 2)
	if len(os.Args) > 4 {
		auth = os.Args[4]
	} else {
		l, err := net.Listen("tcp", auth)
		if err != nil {
			log.Fatal(err)
		}
		go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
				w.Header().Set("X-Cdnapi-Status", "401")
				w.Header().Set("X-Cdnapi-Error", `{"error":{"type":"authentication_error","code":"authentication_required","message":"send an API key"}}`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("X-Cdnapi-Project", "bench")
			w.WriteHeader(http.StatusNoContent)
		}))
	}
	root := filepath.Join(dir, "uploads")
	for _, d := range []string{nginx.UploadIncoming, nginx.UploadOrigin, nginx.UploadTmp} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			log.Fatal(err)
		}
	}
	u := nginx.Upload{Root: root, Auth: auth}
	var servers []*nginx.Server
	for i, name := range []string{"auth", "noauth"} {
		s, err := nginx.New(filepath.Join(dir, name), addr(port+i), u)
		if err != nil {
			log.Fatal(err)
		}
		if name == "noauth" {
			// The same server, with the project set where cdnapi's answer
			// would have set it.
			b, err := os.ReadFile(s.ConfPath())
			if err != nil {
				log.Fatal(err)
			}
			conf := strings.Replace(string(b), "auth_request /.cdnapi/authorize;", "set $cdnapi_project bench;", 1)
			if conf == string(b) {
				log.Fatal("no auth_request in the rendered upload server")
			}
			if err := os.WriteFile(s.ConfPath(), []byte(conf), 0o644); err != nil {
				log.Fatal(err)
			}
			if err := s.Test(); err != nil {
				log.Fatal(err)
			}
		}
		if err := s.Start(); err != nil {
			log.Fatal(err)
		}
		defer s.Stop()
		servers = append(servers, s)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, s := range servers {
		if err := s.Stop(); err != nil {
			log.Print(err)
		}
	}
}
