package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

// errNoRedisServer is returned when no --redis is given and redis-server is
// not on PATH.
var errNoRedisServer = errors.New("redis-server not found on PATH: install Redis 7 or pass --redis host:port")

// ownRedis is a redis-server started for one run, with persistence off.
type ownRedis struct {
	addr string
	cmd  *exec.Cmd
	dir  string
}

// startRedis starts redis-server on a free loopback port and waits until it
// answers PING.
func startRedis(ctx context.Context) (*ownRedis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errNoRedisServer
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	dir, err := os.MkdirTemp("", "rtwbench-redis-")
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	r := &ownRedis{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
	c := redisclient.NewClient("tcp", r.addr, "")
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Do(pctx, "PING")
		cancel()
		if err == nil {
			return r, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.stop()
			return nil, fmt.Errorf("start redis-server on %s: no answer to PING: %w", r.addr, err)
		}
		time.Sleep(50 * time.Millisecond) // waiting for the server to listen
	}
}

// stop kills the server and removes its directory.
func (r *ownRedis) stop() {
	if r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
	os.RemoveAll(r.dir)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// redisInfo returns one field of INFO section.
func redisInfo(ctx context.Context, c *redisclient.Client, section, field string) (string, error) {
	reply, err := c.Do(ctx, "INFO", section)
	if err != nil {
		return "", fmt.Errorf("info %s: %w", section, err)
	}
	for line := range strings.SplitSeq(cast.ToString(reply), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("info %s: no field %s", section, field)
}

// usedMemory returns Redis's used_memory in bytes.
func usedMemory(ctx context.Context, c *redisclient.Client) (int64, error) {
	v, err := redisInfo(ctx, c, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// deleteNamespace unlinks every key of namespace ns (after a run on a Redis
// given with --redis).
func deleteNamespace(ctx context.Context, c *redisclient.Client, ns string) error {
	for _, pattern := range []string{ns + ":*", "{" + ns + ":*"} {
		cursor := "0"
		for {
			reply, err := c.Do(ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
			if err != nil {
				return fmt.Errorf("delete namespace %s: %w", ns, err)
			}
			parts := cast.ToSlice(reply)
			if len(parts) != 2 {
				return fmt.Errorf("delete namespace %s: malformed SCAN reply", ns)
			}
			cursor = cast.ToString(parts[0])
			for _, k := range cast.ToSlice(parts[1]) {
				if _, err := c.Do(ctx, "UNLINK", cast.ToString(k)); err != nil {
					return fmt.Errorf("delete namespace %s: %w", ns, err)
				}
			}
			if cursor == "0" {
				break
			}
		}
	}
	return nil
}

// memoryByKind sums MEMORY USAGE (sampled) over the keys of namespace ns,
// grouped by the last part of their name (due, body, lease, del) or
// "index" for index buckets, and returns one of the body hashes.
func memoryByKind(ctx context.Context, c *redisclient.Client, ns string) (out map[string]int64, body string, err error) {
	out = map[string]int64{}
	for _, pattern := range []string{ns + ":*", "{" + ns + ":*"} {
		cursor := "0"
		for {
			reply, err := c.Do(ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
			if err != nil {
				return nil, "", fmt.Errorf("memory of %s: %w", ns, err)
			}
			parts := cast.ToSlice(reply)
			if len(parts) != 2 {
				return nil, "", fmt.Errorf("memory of %s: malformed SCAN reply", ns)
			}
			cursor = cast.ToString(parts[0])
			for _, k := range cast.ToSlice(parts[1]) {
				key := cast.ToString(k)
				n, err := c.Do(ctx, "MEMORY", "USAGE", key, "SAMPLES", 1000)
				if err != nil {
					return nil, "", fmt.Errorf("memory of %s: %w", key, err)
				}
				kind := key[strings.LastIndexByte(key, ':')+1:]
				if strings.Contains(key, ":index:") {
					kind = "index"
				}
				out[kind] += cast.ToInt64(n)
				if kind == "body" {
					body = key
				}
			}
			if cursor == "0" {
				break
			}
		}
	}
	return out, body, nil
}

// redisCPU returns the CPU time Redis's main thread has used (user and
// system), the thread that runs every command and script.
func redisCPU(ctx context.Context, c *redisclient.Client) (time.Duration, error) {
	var total time.Duration
	for _, field := range []string{"used_cpu_user_main_thread", "used_cpu_sys_main_thread"} {
		v, err := redisInfo(ctx, c, "cpu", field)
		if err != nil {
			return 0, err
		}
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("info cpu %s: %w", field, err)
		}
		total += time.Duration(secs * float64(time.Second))
	}
	return total, nil
}
