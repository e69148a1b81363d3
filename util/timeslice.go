package util

import "time"

// MillisPerMinute is the width of one slice of the wheel.
const MillisPerMinute = int64(time.Minute / time.Millisecond)

// Millis returns t as Unix milliseconds, the score unit of every sorted set
// the wheel keeps. Sub-millisecond parts are truncated toward the past, so a
// task is never scored earlier than a millisecond boundary before its time;
// use CeilMillis where rounding up matters.
func Millis(t time.Time) int64 {
	return t.UnixMilli()
}

// CeilMillis returns t as Unix milliseconds rounded up, so that the returned
// instant is never before t.
func CeilMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// FromMillis converts Unix milliseconds back to a UTC time.
func FromMillis(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

// EpochMinute returns the index of the UTC minute that contains the Unix
// millisecond ms. Minutes count from the Unix epoch, so every worker agrees on
// them whatever its time zone.
func EpochMinute(ms int64) int64 {
	m := ms / MillisPerMinute
	if ms < 0 && ms%MillisPerMinute != 0 {
		m-- // floor, not truncation, for times before 1970
	}
	return m
}

// MinuteStart returns the first Unix millisecond of an epoch minute.
func MinuteStart(minute int64) int64 {
	return minute * MillisPerMinute
}
