// A Go TLS workload for ember's TLS capture tests (crypto/tls.(*Conn).Read
// and Write are what the uprobes hit).  Standard library only; built by the
// tests with `go build`.
//
//	go_tls server ADDR CERT KEY
//	    HTTPS on ADDR (HTTP/1.1 and h2 through ALPN, as net/http does):
//	    /          200, a small body
//	    /status/N  status N
//	    /size/N    200, N bytes
//	    prints "listening" on stdout once it accepts connections.
//	go_tls client URL N [h2|h1]
//	    N sequential GETs of URL over one keep-alive connection (certificate
//	    not verified), h2 by default; prints "done N CODE:COUNT ..." (e.g.
//	    "done 10 200:9 404:1"); exit 1 if a request failed.
//	go_tls version
//	    the Go version it was built with.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go_tls server ADDR CERT KEY | go_tls client URL N [h2|h1] | go_tls version")
	os.Exit(2)
}

func number(s string, min, max int) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= min && n <= max
}

func serve(addr, cert, key string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello from go_tls\n")
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code, ok := number(strings.TrimPrefix(r.URL.Path, "/status/"), 100, 999)
		if !ok {
			http.Error(w, "bad status", http.StatusBadRequest)
			return
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d\n", code)
	})
	mux.HandleFunc("/size/", func(w http.ResponseWriter, r *http.Request) {
		n, ok := number(strings.TrimPrefix(r.URL.Path, "/size/"), 0, 1<<30)
		if !ok {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(n))
		chunk := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", 1024))
		for n > 0 {
			k := n
			if k > len(chunk) {
				k = len(chunk)
			}
			if _, err := w.Write(chunk[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_tls:", err)
		os.Exit(1)
	}
	fmt.Println("listening")
	srv := &http.Server{Handler: mux}
	// ServeTLS with no TLSConfig.NextProtos offers h2 and http/1.1.
	if err := srv.ServeTLS(ln, cert, key); err != nil {
		fmt.Fprintln(os.Stderr, "go_tls:", err)
		os.Exit(1)
	}
}

func client(url string, n int, proto string) {
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		DisableCompression:  true,
	}
	if proto == "h2" {
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	c := &http.Client{Transport: tr}
	counts := map[int]int{}
	failed := false
	for i := 0; i < n; i++ {
		resp, err := c.Get(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go_tls:", err)
			failed = true
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
		if i == 0 {
			fmt.Fprintln(os.Stderr, "go_tls: protocol", resp.Proto)
		}
	}
	codes := make([]int, 0, len(counts))
	for code := range counts {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var b strings.Builder
	done := 0
	for _, code := range codes {
		fmt.Fprintf(&b, " %d:%d", code, counts[code])
		done += counts[code]
	}
	fmt.Printf("done %d%s\n", done, b.String())
	if failed {
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "server":
		if len(os.Args) != 5 {
			usage()
		}
		serve(os.Args[2], os.Args[3], os.Args[4])
	case "client":
		if len(os.Args) != 4 && len(os.Args) != 5 {
			usage()
		}
		n, ok := number(os.Args[3], 0, 1<<30)
		proto := "h2"
		if len(os.Args) == 5 {
			proto = os.Args[4]
		}
		if !ok || (proto != "h2" && proto != "h1") {
			usage()
		}
		client(os.Args[2], n, proto)
	case "version":
		fmt.Println(runtime.Version())
	default:
		usage()
	}
}
