package rtimewheel_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// Schedule a callback half a second ahead and watch it arrive. The example
// runs on an in-memory Redis; give NewClient a real server's address in
// production.
func ExampleNewRTimeWheel() {
	redis, _ := miniredis.Run()
	defer redis.Close()

	arrived := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		arrived <- fmt.Sprintf("%s %s attempt %s: %s", r.Method, r.Header.Get("Rtw-Task-Key"), r.Header.Get("Rtw-Attempt"), body)
	}))
	defer receiver.Close()

	wheel := rtimewheel.NewRTimeWheel(
		redisclient.NewClient("tcp", redis.Addr(), ""),
		httpclient.NewClient(),
		rtimewheel.WithTick(100*time.Millisecond),
		rtimewheel.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	defer wheel.Stop()

	err := wheel.AddTask(context.Background(), "order-42-timeout", &rtimewheel.RTaskElement{
		CallbackURL: receiver.URL + "/orders/42/timeout",
		Req:         map[string]any{"order": 42, "action": "cancel"},
	}, time.Now().Add(500*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-arrived)
	// Output: POST order-42-timeout attempt 1: {"action":"cancel","order":42}
}

// Cancel a task before it fires; a zero time looks the key up.
func ExampleRTimeWheel_RemoveTask() {
	redis, _ := miniredis.Run()
	defer redis.Close()
	client := rtimewheel.NewRTimeWheel(redisclient.NewClient("tcp", redis.Addr(), ""), nil, rtimewheel.WithoutWorker())
	defer client.Stop()
	ctx := context.Background()

	task := &rtimewheel.RTaskElement{CallbackURL: "https://example.com/remind"}
	_ = client.AddTask(ctx, "reminder-7", task, time.Now().Add(24*time.Hour))
	fmt.Println(client.RemoveTask(ctx, "reminder-7", time.Time{}))
	_, err := client.GetTask(ctx, "reminder-7")
	fmt.Println(err)
	// Output:
	// <nil>
	// get task "reminder-7": task not found
}
