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
// letters, behind its version. Field names are short: they are stored once
// per task.
type storedTask struct {
	Key         string            `json:"k"`
	URL         string            `json:"u"`
	Method      string            `json:"m"`
	Header      map[string]string `json:"h,omitempty"`
	Body        json.RawMessage   `json:"b,omitempty"`
	MaxAttempts int               `json:"ma"`
	TimeoutMs   int64             `json:"to"`
	ScheduledMs int64             `json:"s"` // execute_at as scheduled
	DueMs       int64             `json:"n"` // when the next attempt is due
	Attempts    int               `json:"a,omitempty"`
	LastError   string            `json:"e,omitempty"`
	DiedMs      int64             `json:"d,omitempty"`
}

func encodeTask(version string, t *storedTask) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("encode task %q: %w", t.Key, err)
	}
	return version + string(b), nil
}

func decodeTask(raw string) (version string, t *storedTask, err error) {
	if len(raw) < versionLen {
		return "", nil, fmt.Errorf("decode task: %d bytes is too short", len(raw))
	}
	t = new(storedTask)
	if err := json.Unmarshal([]byte(raw[versionLen:]), t); err != nil {
		return "", nil, fmt.Errorf("decode task: %w", err)
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
