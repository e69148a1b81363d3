package rtimewheel

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/rtimewheel/rtimewheel/util"
)

// versionLen is the length of the version that prefixes every stored task.
// Scripts compare it as a prefix, so they never parse JSON.
const versionLen = 16

// newVersion returns a fresh random version: every add gives its entry one,
// and ack, retry and takeover act only on the version they pulled.
func newVersion() string {
	const zeros = "0000000000000000"
	h := strconv.FormatUint(rand.Uint64(), 16)
	return zeros[len(h):] + h
}

// storedTask is a task as kept in a slice's body hash or in the dead
// letters, behind its version. Field names are short and fields that hold
// their default are left out (see encodeTask): a task is stored once per
// waiting task, so every byte counts a million times.
type storedTask struct {
	Key         string            `json:"k,omitempty"` // not stored: the hash field is the key
	URL         string            `json:"u"`
	Method      string            `json:"m,omitempty"` // "" stored means POST
	Header      map[string]string `json:"h,omitempty"`
	Body        json.RawMessage   `json:"b,omitempty"`
	MaxAttempts int               `json:"ma,omitempty"` // 0 stored means DefaultMaxAttempts
	TimeoutMs   int64             `json:"to,omitempty"` // 0 stored means DefaultTimeout
	ScheduledMs int64             `json:"s"`            // execute_at as scheduled
	DueMs       int64             `json:"n,omitempty"`  // when the next attempt is due; 0 stored means ScheduledMs
	Attempts    int               `json:"a,omitempty"`
	LastError   string            `json:"e,omitempty"`
	DiedMs      int64             `json:"d,omitempty"`
}

// encodeTask returns the stored form of t behind version. The key (the
// field it is stored under) and fields holding their defaults are left
// out; decodeTask puts them back.
func encodeTask(version string, t *storedTask) (string, error) {
	c := *t
	c.Key = ""
	if c.Method == "POST" {
		c.Method = ""
	}
	if c.MaxAttempts == DefaultMaxAttempts {
		c.MaxAttempts = 0
	}
	if c.TimeoutMs == DefaultTimeout.Milliseconds() {
		c.TimeoutMs = 0
	}
	if c.DueMs == c.ScheduledMs {
		c.DueMs = 0
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("encode task %q: %w", t.Key, err)
	}
	return version + string(b), nil
}

// decodeTask parses the stored task of key, with the fields encodeTask left
// out filled in (the key is the hash field it is stored under; tasks
// stored with every field decode the same).
func decodeTask(key, raw string) (version string, t *storedTask, err error) {
	if len(raw) < versionLen {
		return "", nil, fmt.Errorf("decode task %q: %d bytes is too short", key, len(raw))
	}
	t = new(storedTask)
	if err := json.Unmarshal([]byte(raw[versionLen:]), t); err != nil {
		return "", nil, fmt.Errorf("decode task %q: %w", key, err)
	}
	t.Key = key
	if t.Method == "" {
		t.Method = "POST"
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = DefaultMaxAttempts
	}
	if t.TimeoutMs == 0 {
		t.TimeoutMs = DefaultTimeout.Milliseconds()
	}
	if t.DueMs == 0 {
		t.DueMs = t.ScheduledMs
	}
	return raw[:versionLen], t, nil
}

func (t *storedTask) info(state TaskState) *TaskInfo {
	info := &TaskInfo{
		Key:         t.Key,
		CallbackURL: t.URL,
		Method:      t.Method,
		Header:      t.Header,
		Req:         t.Body,
		MaxAttempts: t.MaxAttempts,
		Timeout:     time.Duration(t.TimeoutMs) * time.Millisecond,
		ExecuteAt:   util.FromMillis(t.ScheduledMs),
		State:       state,
		Attempts:    t.Attempts,
		LastError:   t.LastError,
	}
	if state == StateDead {
		info.DiedAt = util.FromMillis(t.DiedMs)
	} else {
		info.NextAttemptAt = util.FromMillis(t.DueMs)
		if t.Attempts > 0 {
			info.State = StateRetrying
		}
	}
	return info
}

// location says where the index finds a task: a slice, or the dead letters.
type location struct {
	version string
	dead    bool
	minute  int64
	shard   int
}

func (l location) String() string {
	state := "s"
	if l.dead {
		state = "d"
	}
	return l.version + "|" + state + "|" + strconv.FormatInt(l.minute, 10) + "|" + strconv.Itoa(l.shard)
}

func parseLocation(s string) (location, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 4 || len(parts[0]) != versionLen || (parts[1] != "s" && parts[1] != "d") {
		return location{}, fmt.Errorf("parse location %q: malformed", s)
	}
	minute, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return location{}, fmt.Errorf("parse location %q: minute: %w", s, err)
	}
	shard, err := strconv.Atoi(parts[3])
	if err != nil {
		return location{}, fmt.Errorf("parse location %q: shard: %w", s, err)
	}
	return location{version: parts[0], dead: parts[1] == "d", minute: minute, shard: shard}, nil
}
