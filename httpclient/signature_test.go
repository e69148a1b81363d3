package httpclient

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSign(t *testing.T) {
	// Computed with: printf '%s' '1700000000.order-42.{"id":42}' | openssl dgst -sha256 -hmac whsec_test
	const want = "t=1700000000,v1=63380c4e61fe87f8587562ef393499e15744e8d7e62ed341ce568363cb4e3288"
	at := time.Unix(1700000000, 999e6).In(time.FixedZone("X", -7*3600))
	if got := Sign([]byte("whsec_test"), at, "order-42", []byte(`{"id":42}`)); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	// No body signs "<t>.<key>." and nil and empty bodies sign alike.
	if Sign([]byte("s"), at, "k", nil) != Sign([]byte("s"), at, "k", []byte{}) {
		t.Error("Sign differs for nil and empty bodies")
	}
}

func TestVerifySignature(t *testing.T) {
	secret := []byte("whsec_test")
	key, body := "order-42", []byte(`{"id":42}`)
	now := time.Unix(1700000000, 0)
	valid := Sign(secret, now, key, body)
	sig := strings.TrimPrefix(valid, "t=1700000000,v1=")
	other := strings.TrimPrefix(Sign([]byte("other"), now, key, body), "t=1700000000,v1=")

	tests := []struct {
		name   string
		secret []byte
		header string
		key    string
		body   []byte
		want   error // nil, ErrInvalidSignature or ErrSignatureExpired
	}{
		{"valid", secret, valid, key, body, nil},
		{"spaces and extra fields", secret, " t=1700000000 , v0=zz, x=1, v1=" + sig + " ", key, body, nil},
		{"several v1, one matches", secret, "t=1700000000,v1=" + other + ",v1=nothex,v1=" + sig, key, body, nil},
		{"uppercase hex", secret, "t=1700000000,v1=" + strings.ToUpper(sig), key, body, nil},
		{"4m59s old", secret, Sign(secret, now.Add(-299*time.Second), key, body), key, body, nil},
		{"5m old", secret, Sign(secret, now.Add(-SignatureTolerance), key, body), key, body, nil},
		{"5m1s old", secret, Sign(secret, now.Add(-SignatureTolerance-time.Second), key, body), key, body, ErrSignatureExpired},
		{"an hour old", secret, Sign(secret, now.Add(-time.Hour), key, body), key, body, ErrSignatureExpired},
		{"t=0", secret, Sign(secret, time.Unix(0, 0), key, body), key, body, ErrSignatureExpired},
		{"4m in the future", secret, Sign(secret, now.Add(4*time.Minute), key, body), key, body, nil},
		{"6m in the future", secret, Sign(secret, now.Add(6*time.Minute), key, body), key, body, ErrSignatureExpired},
		{"wrong secret", []byte("other"), valid, key, body, ErrInvalidSignature},
		{"empty secret", nil, Sign(nil, now, key, body), key, body, ErrInvalidSignature},
		{"tampered body", secret, valid, key, []byte(`{"id":43}`), ErrInvalidSignature},
		{"missing body", secret, valid, key, nil, ErrInvalidSignature},
		{"wrong key", secret, valid, "order-43", body, ErrInvalidSignature},
		{"tampered t", secret, "t=1700000001,v1=" + sig, key, body, ErrInvalidSignature},
		{"old and wrong", secret, Sign([]byte("other"), now.Add(-time.Hour), key, body), key, body, ErrInvalidSignature},
		{"empty header", secret, "", key, body, ErrInvalidSignature},
		{"garbage", secret, "garbage", key, body, ErrInvalidSignature},
		{"bare signature", secret, sig, key, body, ErrInvalidSignature},
		{"no t", secret, "v1=" + sig, key, body, ErrInvalidSignature},
		{"empty t", secret, "t=,v1=" + sig, key, body, ErrInvalidSignature},
		{"t not a number", secret, "t=abc,v1=" + sig, key, body, ErrInvalidSignature},
		{"t negative", secret, "t=-1700000000,v1=" + sig, key, body, ErrInvalidSignature},
		{"t signed", secret, "t=+1700000000,v1=" + sig, key, body, ErrInvalidSignature},
		{"t overflows", secret, "t=99999999999999999999,v1=" + sig, key, body, ErrInvalidSignature},
		{"two t", secret, "t=1700000000,t=1700000000,v1=" + sig, key, body, ErrInvalidSignature},
		{"no v1", secret, "t=1700000000", key, body, ErrInvalidSignature},
		{"v1 not hex", secret, "t=1700000000,v1=xyz", key, body, ErrInvalidSignature},
		{"v1 truncated", secret, "t=1700000000,v1=" + sig[:32], key, body, ErrInvalidSignature},
		{"v0 only", secret, "t=1700000000,v0=" + sig, key, body, ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySignature(tt.secret, tt.header, tt.key, tt.body, now)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("VerifySignature = %v, want nil", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("VerifySignature = %v, want %v", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), string(secret)) {
				t.Errorf("error %q contains the secret", err)
			}
		})
	}
}

func TestVerifySignatureLargeTimes(t *testing.T) {
	// Extreme clocks and t values must not overflow into acceptance.
	secret := []byte("s")
	for _, tc := range []struct{ signed, now time.Time }{
		{time.Unix(1<<62, 0), time.Unix(0, 0)},
		{time.Unix(0, 0), time.Unix(1<<62, 0)},
		{time.Unix(9223372036854775807, 0), time.Unix(1700000000, 0)},
	} {
		h := Sign(secret, tc.signed, "k", nil)
		if err := VerifySignature(secret, h, "k", nil, tc.now); !errors.Is(err, ErrSignatureExpired) {
			t.Errorf("signed %d, now %d: err = %v, want ErrSignatureExpired", tc.signed.Unix(), tc.now.Unix(), err)
		}
	}
}
