//go:build !plan9

// Plan 9 has no error numbers for network errors, so these tests do not
// build there.

package retry_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-b8c8f69d/retry"
)

// transientClosedAddr returns the address of a loopback TCP port that
// nothing listens on any more.
func transientClosedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// transientConn returns a client connection to a loopback server, and runs
// serve on the server's end once the client's dial has completed.
func transientConn(t *testing.T, serve func(net.Conn) error) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			err = serve(c)
		}
		served <- err
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	// The server waits for this byte, so that it cannot act before the
	// client's dial has completed.
	_, err = conn.Write([]byte{0})
	require.NoError(t, err)
	require.NoError(t, <-served)
	return conn
}

// transientResetConn returns a client connection whose server end has been
// closed with a reset (SO_LINGER 0), so the client's next read fails with
// ECONNRESET.
func transientResetConn(t *testing.T) net.Conn {
	t.Helper()
	return transientConn(t, func(c net.Conn) error {
		_, err := c.Read(make([]byte, 1))
		return errors.Join(err, c.(*net.TCPConn).SetLinger(0), c.Close())
	})
}

// transientRequireErrno checks that err's tree holds errno. Windows reports
// Winsock error numbers instead of the syscall constants, so it is skipped
// there.
func transientRequireErrno(t *testing.T, err error, errno ...syscall.Errno) {
	t.Helper()
	require.Error(t, err)
	if runtime.GOOS == "windows" {
		return
	}
	for _, e := range errno {
		if errors.Is(err, e) {
			return
		}
	}
	require.Fail(t, "wrong error number", "%v is none of %v", err, errno)
}

// transientResolver returns a pure-Go resolver whose DNS server, reached over
// an in-memory pipe, answers every query with rcode: 3 is NXDOMAIN, 2 is
// SERVFAIL.
func transientResolver(rcode byte) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			client, server := net.Pipe()
			go transientServeDNS(server, rcode)
			return client, nil
		},
	}
}

// transientServeDNS answers the DNS queries that arrive on c (TCP framing:
// a two-byte length before each message) with their own question and rcode,
// until c is closed.
func transientServeDNS(c net.Conn, rcode byte) {
	defer c.Close()
	for {
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, msg); err != nil || len(msg) < 12 {
			return
		}
		msg[2] = 0x80 | msg[2]&0x01 // QR, and RD as asked
		msg[3] = 0x80 | rcode       // RA
		if _, err := c.Write(append(size[:], msg...)); err != nil {
			return
		}
	}
}

// transientTimeout is a hand-made net.Error that timed out.
type transientTimeout struct{}

func (transientTimeout) Error() string   { return "hand-made timeout" }
func (transientTimeout) Timeout() bool   { return true }
func (transientTimeout) Temporary() bool { return true }

func TestIsTransient(t *testing.T) {
	t.Parallel()
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	t.Cleanup(cancel)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name string
		err  func(t *testing.T) error
		want bool
	}{
		// Real errors, produced on loopback.
		{"dial refused", func(t *testing.T) error {
			_, err := net.Dial("tcp", transientClosedAddr(t))
			transientRequireErrno(t, err, syscall.ECONNREFUSED)
			return err
		}, true},
		{"read reset", func(t *testing.T) error {
			_, err := transientResetConn(t).Read(make([]byte, 1))
			transientRequireErrno(t, err, syscall.ECONNRESET)
			return err
		}, true},
		{"write after reset", func(t *testing.T) error {
			conn := transientResetConn(t)
			_, err := conn.Read(make([]byte, 1))
			transientRequireErrno(t, err, syscall.ECONNRESET)
			_, err = conn.Write([]byte("x"))
			transientRequireErrno(t, err, syscall.EPIPE, syscall.ECONNRESET)
			return err
		}, true},
		{"read deadline", func(t *testing.T) error {
			conn := transientConn(t, func(c net.Conn) error {
				t.Cleanup(func() { c.Close() })
				return nil
			})
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(-time.Second)))
			_, err := conn.Read(make([]byte, 1))
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			return err
		}, true},
		{"dial with expired context", func(t *testing.T) error {
			var d net.Dialer
			_, err := d.DialContext(expired, "tcp", transientClosedAddr(t))
			require.Error(t, err)
			return err
		}, true},
		{"dial with canceled context", func(t *testing.T) error {
			var d net.Dialer
			_, err := d.DialContext(canceled, "tcp", transientClosedAddr(t))
			require.Error(t, err)
			return err
		}, false},
		{"http refused", func(t *testing.T) error {
			_, err := http.Get("http://" + transientClosedAddr(t))
			require.Error(t, err)
			return err
		}, true},
		{"http client timeout", func(t *testing.T) error {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) }) // runs first: Close waits for the handler
			client := &http.Client{Timeout: 5 * time.Millisecond}
			t.Cleanup(client.CloseIdleConnections)
			resp, err := client.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			return err
		}, true},
		{"http canceled", func(t *testing.T) error {
			req, err := http.NewRequestWithContext(canceled, http.MethodGet, "http://"+transientClosedAddr(t), nil)
			require.NoError(t, err)
			_, err = http.DefaultClient.Do(req)
			require.Error(t, err)
			return err
		}, false},
		{"dns not found", func(t *testing.T) error {
			_, err := transientResolver(3).LookupHost(context.Background(), "nothing.invalid.")
			var dns *net.DNSError
			require.ErrorAs(t, err, &dns)
			require.True(t, dns.IsNotFound, "%v", err)
			return err
		}, false},
		{"dns server failure", func(t *testing.T) error {
			_, err := transientResolver(2).LookupHost(context.Background(), "nothing.invalid.")
			var dns *net.DNSError
			require.ErrorAs(t, err, &dns)
			require.True(t, dns.IsTemporary, "%v", err)
			return err
		}, true},
		{"dns server refused", func(t *testing.T) error {
			addr := transientClosedAddr(t)
			r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			}}
			_, err := r.LookupHost(context.Background(), "nothing.invalid.")
			var dns *net.DNSError
			require.ErrorAs(t, err, &dns)
			return err
		}, true},
		{"dns expired context", func(t *testing.T) error {
			_, err := transientResolver(3).LookupHost(expired, "nothing.invalid.")
			require.Error(t, err)
			return err
		}, true},
		{"dns canceled context", func(t *testing.T) error {
			_, err := transientResolver(3).LookupHost(canceled, "nothing.invalid.")
			require.Error(t, err)
			return err
		}, false},
		{"truncated read", func(t *testing.T) error {
			_, err := io.ReadFull(strings.NewReader("ab"), make([]byte, 4))
			return err
		}, true},
		{"truncated read wrapped", func(t *testing.T) error {
			_, err := io.ReadFull(strings.NewReader("ab"), make([]byte, 4))
			return fmt.Errorf("decoding: %w", err)
		}, true},

		// Hand-made values.
		{"nil", func(*testing.T) error { return nil }, false},
		{"EOF", func(*testing.T) error { return io.EOF }, false},
		{"unknown", func(*testing.T) error { return errors.New("boom") }, false},
		{"canceled", func(*testing.T) error { return context.Canceled }, false},
		{"canceled wrapped", func(*testing.T) error { return fmt.Errorf("call: %w", context.Canceled) }, false},
		{"deadline exceeded", func(*testing.T) error { return context.DeadlineExceeded }, true},
		{"os deadline exceeded", func(*testing.T) error { return os.ErrDeadlineExceeded }, true},
		{"net.Error timeout", func(*testing.T) error { return transientTimeout{} }, true},
		{"reset", func(*testing.T) error { return syscall.ECONNRESET }, true},
		{"refused", func(*testing.T) error { return syscall.ECONNREFUSED }, true},
		{"aborted", func(*testing.T) error { return syscall.ECONNABORTED }, true},
		{"broken pipe", func(*testing.T) error { return syscall.EPIPE }, true},
		{"other errno", func(*testing.T) error { return syscall.ENOENT }, false},
		{"syscall error", func(*testing.T) error {
			return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
		}, true},
		{"permanent timeout", func(*testing.T) error { return retry.Permanent(os.ErrDeadlineExceeded) }, false},
		{"a retry that gave up on a timeout", func(t *testing.T) error {
			// Retrying at a second layer multiplies the calls to the first.
			return retry.Do(t.Context(), retry.Delays(), func(context.Context) error { return os.ErrDeadlineExceeded })
		}, false},
		{"a wrapped retry that gave up on a reset", func(t *testing.T) error {
			err := retry.Do(t.Context(), retry.Delays(), func(context.Context) error { return syscall.ECONNRESET })
			return fmt.Errorf("load user: %w", err)
		}, false},
		{"wrapped permanent reset", func(*testing.T) error {
			return fmt.Errorf("call: %w", retry.Permanent(syscall.ECONNRESET))
		}, false},
		{"pushback timeout", func(*testing.T) error { return retry.RetryAfter(os.ErrDeadlineExceeded, time.Second) }, true},
		{"timeout joined with canceled", func(*testing.T) error {
			return errors.Join(os.ErrDeadlineExceeded, context.Canceled)
		}, false},
		{"wrapped timeout", func(*testing.T) error { return fmt.Errorf("call: %w", os.ErrDeadlineExceeded) }, true},
		{"wrapped twice", func(*testing.T) error {
			return fmt.Errorf("a: %w", fmt.Errorf("b: %w", syscall.ECONNRESET))
		}, true},
		{"unknown joined with reset", func(*testing.T) error {
			return errors.Join(errors.New("boom"), syscall.ECONNRESET)
		}, true},
		{"not found joined with reset", func(*testing.T) error {
			return errors.Join(&net.DNSError{Err: "no such host", IsNotFound: true}, syscall.ECONNRESET)
		}, true},
		{"other net.Error joined with timeout", func(*testing.T) error {
			return errors.Join(&net.AddrError{Err: "bad", Addr: "x"}, os.ErrDeadlineExceeded)
		}, true},
		{"other errno joined with reset", func(*testing.T) error {
			return errors.Join(syscall.ENOENT, syscall.ECONNRESET)
		}, true},
		{"dns timeout", func(*testing.T) error { return &net.DNSError{Err: "i/o timeout", IsTimeout: true} }, true},
		{"dns temporary", func(*testing.T) error { return &net.DNSError{Err: "server misbehaving", IsTemporary: true} }, true},
		{"dns not found by hand", func(*testing.T) error { return &net.DNSError{Err: "no such host", IsNotFound: true} }, false},
		{"dns unknown", func(*testing.T) error { return &net.DNSError{Err: "odd"} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.err(t)
			assert.Equal(t, tc.want, retry.IsTransient(err), "IsTransient(%#v) for %v", err, err)
		})
	}
}

// TestIsTransientContextDone checks that Retry with If(IsTransient) never
// retries once the caller's context is done, although the error is transient.
func TestIsTransientContextDone(t *testing.T) {
	t.Parallel()
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	require.True(t, retry.IsTransient(timeout))

	t.Run("canceled during the attempt", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := retry.NewFakeClock(time.Unix(0, 0))
		calls := 0
		err := retry.Do(ctx, retry.Constant(time.Second).Take(5), func(context.Context) error {
			calls++
			cancel()
			return timeout
		}, retry.If(retry.IsTransient), retry.WithClock(clock))
		assert.Equal(t, 1, calls)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, timeout)
		assert.Empty(t, clock.Sleeps())
	})
	t.Run("canceled with a cause", func(t *testing.T) {
		t.Parallel()
		cause := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		calls := 0
		err := retry.Do(ctx, retry.Constant(time.Second).Take(5), func(context.Context) error {
			calls++
			cancel(cause)
			return syscall.ECONNRESET
		}, retry.If(retry.IsTransient), retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))
		assert.Equal(t, 1, calls)
		assert.ErrorIs(t, err, cause)
		assert.ErrorIs(t, err, syscall.ECONNRESET)
	})
	t.Run("canceled before the wait", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		err := retry.Do(ctx, retry.Constant(time.Second).Take(5), func(context.Context) error {
			calls++
			return timeout
		}, retry.If(retry.IsTransient), retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))),
			retry.OnRetry(func(retry.Attempt) { cancel() }))
		assert.Equal(t, 1, calls)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("deadline passed during the attempt", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			calls := 0
			err := retry.Do(ctx, retry.Constant(time.Millisecond).Take(5), func(ctx context.Context) error {
				calls++
				<-ctx.Done()
				return ctx.Err() // context.DeadlineExceeded, which is transient
			}, retry.If(retry.IsTransient))
			assert.Equal(t, 1, calls)
			var re *retry.Error
			require.ErrorAs(t, err, &re)
			assert.Equal(t, 1, re.Attempts)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	})
	t.Run("retried while the context lives", func(t *testing.T) {
		t.Parallel()
		clock := retry.NewFakeClock(time.Unix(0, 0))
		calls := 0
		err := retry.Do(context.Background(), retry.Constant(time.Second).Take(2), func(context.Context) error {
			calls++
			return timeout
		}, retry.If(retry.IsTransient), retry.WithClock(clock))
		assert.Equal(t, 3, calls)
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, []time.Duration{time.Second, time.Second}, clock.Sleeps())
	})
	t.Run("not transient is not retried", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("boom")
		calls := 0
		err := retry.Do(context.Background(), retry.Constant(time.Second).Take(2), func(context.Context) error {
			calls++
			return boom
		}, retry.If(retry.IsTransient), retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))
		assert.Equal(t, 1, calls)
		assert.Same(t, boom, err)
	})
}
