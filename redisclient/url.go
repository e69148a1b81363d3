package redisclient

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

const defaultPort = "6379"

// endpoint is what an address or URL names.
type endpoint struct {
	address  string // host:port
	username string
	password string
	db       int
	tls      bool
}

// NewClientFromURL returns a client (see NewClient) of the server named by
// raw, which is either
//
//	host:port
//	redis://[[user]:password@]host[:port][/db]
//	rediss://[[user]:password@]host[:port][/db]   (TLS)
//
// The port defaults to 6379 in the URL forms and the database to 0. Special
// characters of the user and password must be percent-encoded. As with
// redis-cli, "redis://secret@host" takes secret as the password. The
// settings of raw are applied before opts, so opts may override them (for
// example WithTLSConfig to trust a private CA).
//
// It does not connect. The error for a malformed raw says what is wrong
// (scheme, host, port, database) and never contains the password; when raw
// holds credentials, no part of raw but the scheme is quoted.
func NewClientFromURL(raw string, opts ...ClientOption) (*Client, error) {
	ep, err := parseEndpoint(raw)
	if err != nil {
		return nil, err
	}
	all := make([]ClientOption, 0, 3+len(opts))
	all = append(all, WithDB(ep.db), WithUsername(ep.username))
	if ep.tls {
		all = append(all, WithTLSConfig(nil))
	}
	all = append(all, opts...)
	return NewClient("tcp", ep.address, ep.password, all...), nil
}

func parseEndpoint(raw string) (endpoint, error) {
	raw = strings.TrimSpace(raw)
	// Credentials can only sit before an '@'. When there is one, no part of
	// raw goes into an error: a malformed URL may split the password into
	// what looks like a host, port or path.
	secret := strings.Contains(raw, "@")
	quote := func(s string) string {
		if secret {
			return ""
		}
		return " " + strconv.Quote(s)
	}
	fail := func(format string, args ...any) (endpoint, error) {
		return endpoint{}, fmt.Errorf("redisclient: invalid redis address: "+format, args...)
	}

	if raw == "" {
		return fail("empty (want host:port or redis://[[user]:password@]host:port[/db])")
	}
	if !strings.Contains(raw, "://") {
		if secret {
			return fail("credentials need the redis://[[user]:password@]host:port[/db] form")
		}
		host, port, err := net.SplitHostPort(raw)
		if err != nil {
			return fail("%s is not host:port", strconv.Quote(raw))
		}
		if host == "" {
			return fail("missing host in %s", strconv.Quote(raw))
		}
		if !validPort(port) {
			return fail("port %s is not a number in 1-65535", strconv.Quote(port))
		}
		return endpoint{address: net.JoinHostPort(host, port)}, nil
	}

	u, err := url.Parse(raw)
	if err != nil {
		if secret {
			return fail("malformed URL (are special characters of the password percent-encoded?)")
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail("malformed URL: %v", err)
	}
	var ep endpoint
	switch u.Scheme {
	case "redis":
	case "rediss":
		ep.tls = true
	default:
		if !strings.HasPrefix(strings.ToLower(raw), u.Scheme+"://") {
			return fail("malformed URL (want redis:// or rediss://)")
		}
		return fail("unsupported scheme %q (want redis or rediss)", u.Scheme)
	}
	if u.Opaque != "" {
		return fail("malformed URL%s (want %s://host:port)", quote(raw), u.Scheme)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return fail("missing host")
	}
	if port == "" {
		port = defaultPort
	}
	if !validPort(port) {
		return fail("port%s is not a number in 1-65535", quote(port))
	}
	ep.address = net.JoinHostPort(host, port)

	if u.User != nil {
		pw, hasPW := u.User.Password()
		switch {
		case hasPW:
			ep.username, ep.password = u.User.Username(), pw
		default: // "redis://secret@host", as redis-cli reads it
			ep.password = u.User.Username()
		}
	}

	switch path := u.Path; path {
	case "", "/":
	default:
		n, err := strconv.Atoi(path[1:])
		if err != nil || n < 0 || path[0] != '/' {
			return fail("database%s in the path is not a number >= 0 (want /0, /1, ...)", quote(path))
		}
		ep.db = n
	}
	if u.RawQuery != "" || u.ForceQuery {
		return fail("query parameters are not supported")
	}
	if u.Fragment != "" {
		return fail("fragment is not supported")
	}
	return ep, nil
}

func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && port[0] != '+'
}
