//go:build ignore

// bench-http.go is the helper of scripts/bench-http, built by it with the
// standard library only:
//
//	bench-http static ADDR URL      serves, from memory, the answer that URL gives: the
//	                                same status, headers (but Date) and body, to every request
//	bench-http cursors URL N OUT    walks the list at URL (limit=100) to its end over one
//	                                keep-alive connection and writes N request paths of
//	                                limit=20 pages, at cursors spread evenly over the walk, to OUT
//	bench-http spellings URL OUT    writes spellings of the query of URL's page: parameter
//	                                order, leading zeros, escapes, that all name one page
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatal("usage: bench-http static ADDR URL | cursors URL N OUT | spellings URL OUT")
	}
	var err error
	switch os.Args[1] {
	case "static":
		err = static(os.Args[2], os.Args[3])
	case "cursors":
		var n int
		if n, err = strconv.Atoi(os.Args[3]); err == nil {
			err = cursors(os.Args[2], n, os.Args[4])
		}
	case "spellings":
		err = spellings(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal("bench-http: ", err)
	}
}

// static serves the answer of src from memory: the minimal Go server that
// cdnapi's hot page is compared with.
func static(addr, src string) error {
	res, err := http.Get(src)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return err
	}
	header := res.Header.Clone()
	header.Del("Date")
	header.Set("Content-Length", strconv.Itoa(len(body)))
	log.Printf("static: %d bytes of body from %s on %s", len(body), src, addr)
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range header {
			h[k] = v
		}
		w.WriteHeader(res.StatusCode)
		w.Write(body)
	}))
}

// cursors walks the list at src and writes n paths of pages at cursors
// spread over the whole list.
func cursors(src string, n int, out string) error {
	u, err := url.Parse(src)
	if err != nil {
		return err
	}
	var all []string
	next := ""
	for {
		q := url.Values{"limit": {"100"}}
		if next != "" {
			q.Set("cursor", next)
		}
		u.RawQuery = q.Encode()
		res, err := http.Get(u.String())
		if err != nil {
			return err
		}
		var page struct {
			NextCursor *string `json:"next_cursor"`
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %v", u, res.StatusCode, err)
		}
		if page.NextCursor == nil {
			break
		}
		next = *page.NextCursor
		all = append(all, next)
	}
	if len(all) == 0 {
		return fmt.Errorf("%s has a single page", src)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, "%s?limit=20&cursor=%s\n", u.Path, all[i*len(all)/n])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	log.Printf("cursors: %d pages walked, %d paths written", len(all)+1, n)
	return f.Close()
}

// spellings writes request paths that all name the page of limit=20 of the
// list at src, spelled differently, the way a client that builds its query
// by hand may.
func spellings(src, out string) error {
	u, err := url.Parse(src)
	if err != nil {
		return err
	}
	var b strings.Builder
	for zeros := range 8 {
		limit := strings.Repeat("0", zeros) + "20"
		fmt.Fprintf(&b, "%s?limit=%s\n", u.Path, limit)
		fmt.Fprintf(&b, "%s?&limit=%s&\n", u.Path, limit)
		fmt.Fprintf(&b, "%s?%%6Cimit=%s\n", u.Path, limit)
		fmt.Fprintf(&b, "%s?limit=%s%%30\n", u.Path, strings.Repeat("0", zeros)+"2")
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
