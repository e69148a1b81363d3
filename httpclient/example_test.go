package httpclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/rtimewheel/rtimewheel/httpclient"
)

// A receiver checks that a callback comes from its scheduler before acting on
// it: the signature covers the key and the exact body, and is accepted for
// five minutes.
func ExampleVerifySignature() {
	secret := []byte("whsec_shared_with_the_scheduler")

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		err = httpclient.VerifySignature(secret,
			r.Header.Get(httpclient.HeaderSignature),
			r.Header.Get(httpclient.HeaderTaskKey),
			body, time.Now())
		switch {
		case errors.Is(err, httpclient.ErrSignatureExpired):
			http.Error(w, "stale callback", http.StatusUnauthorized)
		case err != nil:
			http.Error(w, "bad signature", http.StatusUnauthorized)
		default:
			fmt.Fprintf(w, "processing %s attempt %s", r.Header.Get(httpclient.HeaderTaskKey), r.Header.Get(httpclient.HeaderAttempt))
		}
	})

	send := func(signedAt time.Time, body string) {
		r := httptest.NewRequest("POST", "/hooks/order", strings.NewReader(body))
		r.Header.Set(httpclient.HeaderTaskKey, "order-42")
		r.Header.Set(httpclient.HeaderAttempt, "1")
		r.Header.Set(httpclient.HeaderSignature, httpclient.Sign(secret, signedAt, "order-42", []byte(`{"id":42}`)))
		w := httptest.NewRecorder()
		receiver.ServeHTTP(w, r)
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	}
	send(time.Now(), `{"id":42}`)
	send(time.Now(), `{"id":43}`)                 // body changed on the way
	send(time.Now().Add(-time.Hour), `{"id":42}`) // replayed an hour later
	// Output:
	// 200 processing order-42 attempt 1
	// 401 bad signature
	// 401 stale callback
}

func ExampleClient_Call() {
	received := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- fmt.Sprintf("%s %s %s=%s %s=%s %s=%s %s",
			r.Method, r.URL.Path,
			httpclient.HeaderTaskKey, r.Header.Get(httpclient.HeaderTaskKey),
			httpclient.HeaderAttempt, r.Header.Get(httpclient.HeaderAttempt),
			httpclient.HeaderScheduledAt, r.Header.Get(httpclient.HeaderScheduledAt),
			body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	client := httpclient.NewClient(httpclient.WithDefaultTimeout(5 * time.Second))
	res := client.Call(context.Background(), httpclient.Callback{
		Key:         "order-42",
		Attempt:     1,
		ScheduledAt: time.Date(2026, 11, 22, 9, 0, 0, 250e6, time.FixedZone("CET", 3600)),
		Method:      http.MethodPost,
		URL:         srv.URL + "/hooks/order",
		Body:        []byte(`{"id":42}`),
	})
	fmt.Println(<-received)
	fmt.Println("delivered:", res.Delivered, "status:", res.StatusCode, "err:", res.Err)
	// Output:
	// POST /hooks/order Rtw-Task-Key=order-42 Rtw-Attempt=1 Rtw-Scheduled-At=2026-11-22T08:00:00.250Z {"id":42}
	// delivered: true status: 204 err: <nil>
}
