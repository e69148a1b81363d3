package rtimewheel

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

const (
	// MaxUpcomingMinutes bounds the minutes UpcomingLoad covers.
	MaxUpcomingMinutes = 1440
	// MaxRecentMinutes bounds the minutes RecentStats covers: as long as
	// statistics are kept.
	MaxRecentMinutes = int(statsTTL / time.Minute)
)

// MinuteLoad is the tasks of one minute that have not fired yet.
type MinuteLoad struct {
	Minute  time.Time // the minute's first instant, UTC
	Waiting int       // due in this minute, waiting to be pulled (retries included)
	Leased  int       // pulled by a worker, firing or about to
}

// MinuteStats is what the workers did in one minute, counted in the minute
// each callback attempt started.
type MinuteStats struct {
	Minute    time.Time // the minute's first instant, UTC
	Fired     int       // callback attempts started
	Delivered int       // attempts answered 2xx
	Retried   int       // failed attempts scheduled again
	Dead      int       // failed last attempts: new dead letters
	Dropped   int       // attempts of tasks removed or replaced meanwhile
	// LatenessP50 and LatenessP99 are percentiles of how late the attempts
	// started after their due time: the upper bound of the histogram bucket,
	// exact to the millisecond up to 20 ms and within 10% above. Zero when
	// nothing fired.
	LatenessP50 time.Duration
	LatenessP99 time.Duration
}

// UpcomingLoad returns, for each of the minutes minutes starting with the
// current one, the tasks due in it that have not fired, summed over every
// shard of the minute. minutes is 1 to MaxUpcomingMinutes.
func (w *RTimeWheel) UpcomingLoad(ctx context.Context, minutes int) ([]MinuteLoad, error) {
	if err := w.begin(ctx, "upcoming load"); err != nil {
		return nil, err
	}
	if minutes < 1 || minutes > MaxUpcomingMinutes {
		return nil, fmt.Errorf("upcoming load: minutes %d is not between 1 and %d", minutes, MaxUpcomingMinutes)
	}
	first := util.EpochMinute(util.Millis(w.now()))
	calls := make([]redisclient.ScriptCall, 0, minutes*w.cfg.shards)
	for m := first; m < first+int64(minutes); m++ {
		for s := range w.cfg.shards {
			calls = append(calls, redisclient.ScriptCall{Script: w.scripts.SliceCount, Keys: w.slice(m, s)})
		}
	}
	replies, err := w.redis.EvalBatch(ctx, calls)
	if err != nil {
		return nil, storeErr("upcoming load", err)
	}
	load := make([]MinuteLoad, minutes)
	for i := range load {
		load[i].Minute = util.FromMillis(util.MinuteStart(first + int64(i)))
	}
	for i, r := range replies {
		if r.Err != nil {
			return nil, storeErr("upcoming load", r.Err)
		}
		counts := cast.ToSlice(r.Value)
		if len(counts) != 2 {
			return nil, fmt.Errorf("upcoming load: malformed reply %v", r.Value)
		}
		m := &load[i/w.cfg.shards]
		m.Waiting += cast.ToInt(counts[0])
		m.Leased += cast.ToInt(counts[1])
	}
	return load, nil
}

// RecentStats returns the statistics of the last minutes minutes, oldest
// first, ending with the current minute. Every worker adds its counts about
// once a second; they are kept for two hours. minutes is 1 to
// MaxRecentMinutes.
func (w *RTimeWheel) RecentStats(ctx context.Context, minutes int) ([]MinuteStats, error) {
	if err := w.checkStopped("recent statistics"); err != nil {
		return nil, err
	}
	if minutes < 1 || minutes > MaxRecentMinutes {
		return nil, fmt.Errorf("recent statistics: minutes %d is not between 1 and %d", minutes, MaxRecentMinutes)
	}
	last := util.EpochMinute(util.Millis(w.now()))
	first := last - int64(minutes) + 1
	calls := make([]redisclient.ScriptCall, 0, minutes)
	for m := first; m <= last; m++ {
		calls = append(calls, redisclient.ScriptCall{Script: w.scripts.HashRead, Keys: []string{w.keys.Stats(m)}})
	}
	replies, err := w.redis.EvalBatch(ctx, calls)
	if err != nil {
		return nil, storeErr("recent statistics", err)
	}
	stats := make([]MinuteStats, minutes)
	for i, r := range replies {
		if r.Err != nil {
			return nil, storeErr("recent statistics", r.Err)
		}
		stats[i] = minuteStats(first+int64(i), hashFields(r.Value))
	}
	return stats, nil
}

// minuteStats decodes one minute's statistics hash.
func minuteStats(minute int64, fields map[string]string) MinuteStats {
	s := MinuteStats{
		Minute:    util.FromMillis(util.MinuteStart(minute)),
		Fired:     cast.ToInt(fields[statFired]),
		Delivered: cast.ToInt(fields[statDelivered]),
		Retried:   cast.ToInt(fields[statRetried]),
		Dead:      cast.ToInt(fields[statDead]),
		Dropped:   cast.ToInt(fields[statDropped]),
	}
	type bucket struct{ upper, count int64 }
	var hist []bucket
	var total int64
	for field, value := range fields {
		rest, ok := strings.CutPrefix(field, statLateness)
		if !ok {
			continue
		}
		upper, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			continue
		}
		n := cast.ToInt64(value)
		hist = append(hist, bucket{upper, n})
		total += n
	}
	if total == 0 {
		return s
	}
	slices.SortFunc(hist, func(a, b bucket) int { return int(a.upper - b.upper) })
	percentile := func(q float64) time.Duration {
		rank := int64(math.Ceil(q * float64(total)))
		var seen int64
		for _, b := range hist {
			seen += b.count
			if seen >= rank {
				return time.Duration(b.upper) * time.Millisecond
			}
		}
		return time.Duration(hist[len(hist)-1].upper) * time.Millisecond
	}
	s.LatenessP50 = percentile(0.50)
	s.LatenessP99 = percentile(0.99)
	return s
}

// DeadLetterCount returns how many dead letters are kept.
func (w *RTimeWheel) DeadLetterCount(ctx context.Context) (int, error) {
	if err := w.checkStopped("count dead letters"); err != nil {
		return 0, err
	}
	reply, err := w.redis.Do(ctx, "ZCARD", w.keys.Dead().At)
	if err != nil {
		return 0, storeErr("count dead letters", err)
	}
	return cast.ToInt(reply), nil
}
