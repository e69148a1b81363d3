package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the browser to drive: $RTW_CHROMIUM, else chromium or
// chromium-browser on PATH. The test skips without one.
func chromium(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("RTW_CHROMIUM"); path != "" {
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium, or set RTW_CHROMIUM); .ci/run installs it")
	return ""
}

// screenshotPath is where a screenshot named name is saved: in
// $RTW_SCREENSHOT_DIR, else in the test's temporary directory.
func screenshotPath(t *testing.T, name string) string {
	dir := os.Getenv("RTW_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// newBrowser starts headless Chromium with a fresh profile and no
// background traffic, closed when the test ends.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// poll waits until the JavaScript expression is truthy.
func poll(expr string, timeout time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond))
}

// acceptConfirms makes the page's confirm() dialogs (Cancel, Delete) answer
// yes, as a user clicking OK.
func acceptConfirms() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void](`window.confirm = () => true; undefined`)(ctx, t)
		return err
	})
}

// The dashboard asks for the token, shows the upcoming load the API
// reports, retries a dead letter, cancels a task, and looks right on a
// laptop and on a phone.
func TestDashboard(t *testing.T) {
	ctx := newBrowser(t)
	recv := newReceiver(t)
	srv := startServer(t, "dashboard-test-token")

	// Tasks over the next minutes, counted per minute.
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	want := map[string]int{}
	for ahead, n := range map[int]int{2: 4, 3: 7, 5: 2, 9: 5} {
		minute := start.Add(time.Duration(ahead) * time.Minute)
		for i := range n {
			srv.schedule(t, fmt.Sprintf("later-%d-%d", ahead, i), recv.srv.URL, minute.Add(time.Duration(i)*time.Second), 5)
		}
		want[minuteKey(minute)] = n
	}
	// Callbacks that fire in a few seconds, and three that die. Due more
	// than a tick ahead, they are pulled early and fire on time.
	soon := now.Add(2500 * time.Millisecond)
	for i := range 12 {
		srv.schedule(t, fmt.Sprintf("now-%d", i), recv.srv.URL, soon.Add(time.Duration(i)*100*time.Millisecond), 5)
	}
	for i := range 3 {
		srv.schedule(t, fmt.Sprintf("dead-%d", i), recv.srv.URL, soon, 2)
	}
	waitFor(t, 30*time.Second, "three dead letters and twelve deliveries", func() bool {
		var count struct{ Count int }
		srv.call(t, "GET", "/v1/stats/dead-letters", nil, 200, &count)
		return count.Count == 3 && recv.delivered.Load() == 12
	})

	// The overview, after the token is given.
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.base+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("login-token")),
		chromedp.SendKeys(chromedp.ID("login-token"), srv.token),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#chart-upcoming canvas")),
		poll(`document.body.dataset.loaded === "overview" && document.querySelectorAll("#table-upcoming tbody tr").length >= 4`, 20*time.Second),
	)
	if err != nil {
		t.Fatalf("load the overview: %v", err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`Object.fromEntries([...document.querySelectorAll("#table-upcoming tbody tr")].map(r => [r.dataset.minute, Number(r.dataset.count)]))`))
	if err != nil {
		t.Fatal(err)
	}
	for minute, n := range want {
		if shown[minute] != n {
			t.Errorf("upcoming chart: minute %s shows %d tasks, want %d (shown: %v)", minute, shown[minute], n, shown)
		}
	}
	if len(shown) != len(want) {
		t.Errorf("upcoming chart shows minutes %v, want %v", shown, want)
	}
	if err := chromedp.Do(ctx,
		poll(`document.getElementById("card-delivered").textContent === "12" && document.getElementById("card-dead").textContent === "3"`, 20*time.Second),
	); err != nil {
		t.Fatalf("overview cards: %v", err)
	}
	cards, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`({upcoming: document.getElementById("card-upcoming").textContent,
		delivered: document.getElementById("card-delivered").textContent,
		dead: document.getElementById("card-dead").textContent,
		workers: document.getElementById("card-workers").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	if cards["upcoming"] != "18" || cards["workers"] != "1" {
		t.Errorf("cards = %v; want 18 upcoming, 1 worker", cards)
	}
	laptop := screenshotPath(t, "dashboard.png")
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(laptop, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the overview: %s (%d bytes)", laptop, len(png))

	// Retry a dead letter: it leaves the table, and this time it is delivered.
	recv.failing.Store(false)
	err = chromedp.Do(ctx,
		chromedp.Navigate(srv.base+"/ui/#dead-letters"),
		poll(`document.body.dataset.loaded === "dead-letters" && document.querySelectorAll("#dead-letters tbody tr").length === 3`, 20*time.Second),
		chromedp.Click(chromedp.CSS(`#dead-letters tr[data-key="dead-1"] button.retry`)),
		poll(`!document.querySelector('#dead-letters tr[data-key="dead-1"]') && document.getElementById("dead-notice").textContent.includes("dead-1")`, 10*time.Second),
	)
	if err != nil {
		t.Fatalf("retry a dead letter: %v", err)
	}
	waitFor(t, 20*time.Second, "the retried dead letter to be delivered", func() bool { return recv.delivered.Load() == 13 })
	if err := chromedp.Do(ctx, poll(`document.querySelectorAll("#dead-letters tbody tr").length === 2`, 20*time.Second)); err != nil {
		t.Fatalf("after a refresh the table should keep 2 dead letters: %v", err)
	}

	// Look a task up and cancel it.
	err = chromedp.Do(ctx,
		chromedp.Navigate(srv.base+"/ui/#task"),
		chromedp.WaitVisible(chromedp.ID("lookup-key")),
		chromedp.SendKeys(chromedp.ID("lookup-key"), "later-9-0"),
		chromedp.Click(chromedp.CSS(`#lookup button[type="submit"]`)),
		poll(`!document.getElementById("task-result").hidden && document.getElementById("task-fields").textContent.includes("scheduled")`, 10*time.Second),
		acceptConfirms(),
		chromedp.Click(chromedp.ID("task-cancel")),
		poll(`document.getElementById("task-notice").textContent.includes("Cancelled later-9-0")`, 10*time.Second),
	)
	if err != nil {
		t.Fatalf("look up and cancel a task: %v", err)
	}
	srv.call(t, "GET", "/v1/tasks/later-9-0", nil, 404, nil)

	// On a phone.
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(srv.base+"/ui/#overview"),
		poll(`document.body.dataset.loaded === "overview"`, 20*time.Second),
	)
	if err != nil {
		t.Fatalf("phone view: %v", err)
	}
	if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	phone := screenshotPath(t, "dashboard-phone.png")
	if err := os.WriteFile(phone, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot on a phone: %s (%d bytes)", phone, len(png))
}
