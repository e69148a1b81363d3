package redisclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
)

// testServer returns the address of the Redis server tests run against: the
// server named by RTW_TEST_REDIS (host:port) when set, with m nil, otherwise
// a fresh miniredis m stopped at the end of the test.
func testServer(t *testing.T) (addr string, m *miniredis.Miniredis) {
	t.Helper()
	if a := os.Getenv("RTW_TEST_REDIS"); a != "" {
		return a, nil
	}
	m = miniredis.RunT(t)
	return m.Addr(), m
}

// newTestClient returns a client of addr closed at the end of the test.
func newTestClient(t *testing.T, addr string, opts ...ClientOption) *Client {
	t.Helper()
	c := NewClient("tcp", addr, "", opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testCtx returns a context bounding one test step.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randHex(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// keyPrefix returns a key prefix unique to this test run, so tests sharing
// a real server do not collide. Keys under it are deleted at the end of the
// test (cleanups run before c is closed, as c was created first).
func keyPrefix(t *testing.T, c *Client) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, t.Name())
	prefix := fmt.Sprintf("rtw-test:%s:%s:", name, randHex(t))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cursor := "0"
		for {
			v, err := redis.Values(c.Do(ctx, "SCAN", cursor, "MATCH", prefix+"*", "COUNT", 1000))
			if err != nil || len(v) != 2 {
				return
			}
			keys, _ := redis.Strings(v[1], nil)
			for _, k := range keys {
				_, _ = c.Do(ctx, "DEL", k)
			}
			cursor, _ = redis.String(v[0], nil)
			if cursor == "0" {
				return
			}
		}
	})
	return prefix
}

// uniqueScript returns a script whose source (and so SHA1) is new to the
// server, so that no earlier run has loaded it.
func uniqueScript(t *testing.T, name, body string) *Script {
	t.Helper()
	return NewScript(name, "-- "+name+" "+randHex(t)+"\n"+body)
}

// recorder records all bytes written to Redis by a client, to check which
// commands were sent.
type recorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) option() ClientOption {
	return func(o *options) { o.dialContext = r.dial }
}

func (r *recorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &recConn{Conn: c, r: r}, nil
}

// count returns how many commands named cmd were sent: occurrences of the
// RESP bulk string cmd (exact, so EVAL does not count EVALSHA).
func (r *recorder) count(cmd string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Count(r.buf.Bytes(), fmt.Appendf(nil, "$%d\r\n%s\r\n", len(cmd), cmd))
}

type recConn struct {
	net.Conn
	r *recorder
}

func (c *recConn) Write(p []byte) (int, error) {
	c.r.mu.Lock()
	c.r.buf.Write(p)
	c.r.mu.Unlock()
	return c.Conn.Write(p)
}

// hungServer returns the address of a TCP server that accepts connections
// and never answers.
func hungServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// closedPort returns a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// selfSignedTLS returns a server TLS configuration with a self-signed
// certificate for 127.0.0.1 and the pool of roots trusting it.
func selfSignedTLS(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redisclient test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:   tls.VersionTLS12,
	}, roots
}
