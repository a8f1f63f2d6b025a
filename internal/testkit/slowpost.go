package testkit

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SlowPost POSTs body to path of the server at baseURL over a raw connection, one byte per
// 200ms, until the server answers. It returns the answer and whether the
// server then closed the connection (rather than the test giving up after
// 20s).
func SlowPost(t testing.TB, baseURL, path, token string, body []byte, tlsConfig *tls.Config) (*http.Response, []byte, bool) {
	t.Helper()
	var conn net.Conn
	var err error
	if host, ok := strings.CutPrefix(baseURL, "https://"); ok {
		conn, err = tls.Dial("tcp", host, tlsConfig)
	} else {
		conn, err = net.Dial("tcp", strings.TrimPrefix(baseURL, "http://"))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: cairn\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, auth, len(body))
	answered := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range body {
			select {
			case <-answered:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	defer func() { <-done }()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	close(answered)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = rd.ReadByte()
	closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
	return resp, raw, closed
}
