package httpclient

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureTolerance is how far the t of an Rtw-Signature may lie from the
// receiver's clock, in the past or in the future, for VerifySignature to
// accept it.
const SignatureTolerance = 5 * time.Minute

// Errors of VerifySignature; match them with errors.Is.
var (
	// ErrInvalidSignature means the header is missing or malformed, or no
	// v1 signature in it matches the request.
	ErrInvalidSignature = errors.New("invalid signature")
	// ErrSignatureExpired means the signature matches but its t lies more
	// than SignatureTolerance away from now: possibly a replay.
	ErrSignatureExpired = errors.New("signature expired")
)

// Sign returns the Rtw-Signature header value for a callback with key and
// body signed at t:
//
//	t=<unix seconds>,v1=<lowercase hex HMAC-SHA256(secret, "<t>.<key>.<body>")>
//
// body is the exact bytes sent, nil or empty for none.
func Sign(secret []byte, t time.Time, key string, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, key, body))
}

// VerifySignature checks the Rtw-Signature header of a received callback
// against secret, the request's Rtw-Task-Key and its exact body. It returns
// nil when a v1 signature in the header matches and its t lies within
// SignatureTolerance of now (both ways); an error wrapping
// ErrSignatureExpired when a signature matches but t is outside that window;
// and an error wrapping ErrInvalidSignature otherwise, also for an empty
// secret. Fields other than t and v1 are ignored, and any of several v1
// values may match. Signatures are compared in constant time.
func VerifySignature(secret []byte, header, key string, body []byte, now time.Time) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: empty secret", ErrInvalidSignature)
	}
	ts, sigs, err := parseSignature(header)
	if err != nil {
		return err
	}
	want := mac(secret, ts, key, body)
	matched := false
	for _, sig := range sigs {
		if hmac.Equal(want, sig) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("%w: no v1 signature matches", ErrInvalidSignature)
	}
	// ts is at most 19 digits and parsed before; compare in seconds so that
	// no value overflows.
	t, _ := strconv.ParseInt(ts, 10, 64)
	nowSec, tol := now.Unix(), int64(SignatureTolerance/time.Second)
	switch {
	case t < nowSec-tol:
		return fmt.Errorf("%w: signed %ds ago", ErrSignatureExpired, nowSec-t)
	case t > nowSec+tol:
		return fmt.Errorf("%w: signed %ds in the future", ErrSignatureExpired, t-nowSec)
	}
	return nil
}

// parseSignature splits "t=...,v1=...[,v1=...]" into the t as sent and the
// decoded v1 values. v1 values that are not hex are skipped: they match
// nothing.
func parseSignature(header string) (ts string, sigs [][]byte, err error) {
	for field := range strings.SplitSeq(header, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch name {
		case "t":
			if ts != "" {
				return "", nil, fmt.Errorf("%w: several t fields", ErrInvalidSignature)
			}
			if value == "" || strings.Trim(value, "0123456789") != "" {
				return "", nil, fmt.Errorf("%w: t is not unix seconds", ErrInvalidSignature)
			}
			if _, err := strconv.ParseInt(value, 10, 64); err != nil {
				return "", nil, fmt.Errorf("%w: t is out of range", ErrInvalidSignature)
			}
			ts = value
		case "v1":
			if sig, err := hex.DecodeString(value); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	if ts == "" {
		return "", nil, fmt.Errorf("%w: no t field", ErrInvalidSignature)
	}
	if len(sigs) == 0 {
		return "", nil, fmt.Errorf("%w: no v1 signature", ErrInvalidSignature)
	}
	return ts, sigs, nil
}

// mac is HMAC-SHA256(secret, "<ts>.<key>.<body>").
func mac(secret []byte, ts, key string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(ts + "." + key + "."))
	h.Write(body)
	return h.Sum(nil)
}
