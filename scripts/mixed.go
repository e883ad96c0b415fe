//go:build ignore

// mixed.go is the helper of scripts/bench-mixed and scripts/soak, built by
// them with the standard library only:
//
//	mixed edgelog PATH RATE REGIONS   appends nginx access-log lines in the format of
//	                                  deploy/nginx/cdnapi-log.conf to PATH, RATE a second
//	                                  (in slices of 10 ms), of the comma-separated regions,
//	                                  until killed; each line is a GET answered 200 (an asset)
//	mixed probe BASE PATHS RATE SECS  sends RATE requests a second, open loop (each on its
//	                                  own schedule, whatever the answers before it), to BASE
//	                                  plus a path of the file PATHS at random, for SECS seconds,
//	                                  and prints "n N p50 MS p99 MS max MS failed N"
//	mixed metric URL NAME             prints the sum of the samples of metric NAME (any
//	                                  labels; NAME may begin them: 'x_total{result="listed"')
//	                                  on the Prometheus page at URL
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatal("usage: mixed edgelog PATH RATE REGIONS | probe BASE PATHS RATE SECS | metric URL NAME")
	}
	var err error
	switch os.Args[1] {
	case "edgelog":
		var rate int
		if rate, err = strconv.Atoi(os.Args[3]); err == nil {
			err = edgelog(os.Args[2], rate, strings.Split(os.Args[4], ","))
		}
	case "probe":
		var rate, secs int
		if rate, err = strconv.Atoi(os.Args[4]); err == nil {
			if secs, err = strconv.Atoi(os.Args[5]); err == nil {
				err = probe(os.Args[2], os.Args[3], rate, secs)
			}
		}
	case "metric":
		err = metric(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal("mixed: ", err)
	}
}

// edgelog writes rate lines a second to path, as an nginx edge would: in
// appends of whole lines, each slice of 10 ms in one write.
func edgelog(path string, rate int, regions []string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	statuses := []string{"HIT", "HIT", "HIT", "MISS", "EXPIRED", ""}
	const slice = 10 * time.Millisecond
	start := time.Now()
	written := 0
	var buf []byte
	id := make([]byte, 16)
	tick := time.NewTicker(slice)
	defer tick.Stop()
	for now := range tick.C {
		// Lines due by now, whatever ticks were missed on a busy machine.
		due := int(math.Round(now.Sub(start).Seconds() * float64(rate)))
		buf = buf[:0]
		for ; written < due; written++ {
			rand.Read(id)
			msec := float64(now.UnixMilli()) / 1000
			buf = fmt.Appendf(buf, `{"request_id":"%s","msec":%.3f,"region":"%s","request_method":"GET","uri":"/static/js/app-%05d.js","status":200,"body_bytes_sent":%d,"upstream_cache_status":"%s"}`+"\n",
				hex.EncodeToString(id), msec, regions[written%len(regions)], mrand.IntN(20000), 1000+mrand.IntN(1<<20),
				statuses[written%len(statuses)])
		}
		if len(buf) > 0 {
			if _, err := f.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// metric prints the sum of a metric's samples.
func metric(url, name string) error {
	res, err := http.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if !strings.Contains(name, "{") && (rest == "" || (rest[0] != ' ' && rest[0] != '{')) {
			continue // another metric whose name begins with this one
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			sum += v
		}
	}
	fmt.Println(strconv.FormatFloat(sum, 'f', -1, 64))
	return sc.Err()
}

// probe measures latency at a fixed rate that does not saturate the server:
// wrk's closed loop at full speed measures mostly its own queue.
func probe(base, pathsFile string, rate, secs int) error {
	b, err := os.ReadFile(pathsFile)
	if err != nil {
		return err
	}
	paths := strings.Fields(string(b))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var (
		mu     sync.Mutex
		took   []time.Duration
		failed int
		wg     sync.WaitGroup
	)
	every := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < rate*secs; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
		wg.Add(1)
		go func(path string) {
			defer wg.Done()
			t0 := time.Now()
			res, err := client.Get(base + path)
			if err == nil {
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err == nil && res.StatusCode != http.StatusOK {
					err = fmt.Errorf("%d", res.StatusCode)
				}
			}
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			took = append(took, d)
		}(paths[mrand.IntN(len(paths))])
	}
	wg.Wait()
	slices.Sort(took)
	at := func(p float64) float64 {
		if len(took) == 0 {
			return 0
		}
		return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000
	}
	fmt.Printf("n %d p50 %.2f p99 %.2f max %.2f failed %d\n", len(took), at(0.5), at(0.99), at(1), failed)
	return nil
}
