package retrysql_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql"
)

// The transfer benchmark: clients run SERIALIZABLE read-modify-write
// transfers between two random rows of a small hot set, each under one
// strategy, and report committed transactions per second, the p99 latency of
// a committed transfer (from its first BEGIN to its COMMIT, retries
// included), the attempts per commit and the share of transfers given up.
// Every strategy tries a transfer at most 51 times (crdb.ExecuteTx's default
// of 50 retries). docs/SQL.md has the figures and how to run it (three
// times, so that the strategies' runs interleave; -count would run each
// sub-benchmark its times in a row):
//
//	go test -run '^$' -bench Transfer -benchtime 6s ./retrysql

const (
	hotRows    = 10
	maxRetries = 50
)

// ourBase is the base delay of our strategies (-transfer.base).
var ourBase time.Duration

func init() {
	flag.DurationVar(&ourBase, "transfer.base", 10*time.Millisecond, "BenchmarkTransfer: the base delay of the ours-* strategies")
}

// strategy runs one transfer until it commits or gives up, and says how many
// attempts it made.
type strategy struct {
	name string
	run  func(ctx context.Context, db *sql.DB, transfer func(context.Context, *sql.Tx) error) (attempts int, err error)
}

// contention reports whether err is what a retry loop written by hand checks.
func contention(err error) bool {
	code := retrysql.SQLState(err)
	return code == "40001" || code == "40P01"
}

// handTx is one attempt as a loop written by hand makes it.
func handTx(ctx context.Context, db *sql.DB, transfer func(context.Context, *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, serializable)
	if err != nil {
		return err
	}
	if err := transfer(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// ours is retrysql.Tx with the schedule s and the options opts.
func ours(name string, s retry.Schedule, opts ...retry.Option) strategy {
	return strategy{name, func(ctx context.Context, db *sql.DB, transfer func(context.Context, *sql.Tx) error) (int, error) {
		n := 0
		err := retrysql.Tx(ctx, db, s, serializable, func(ctx context.Context, tx *sql.Tx) error {
			n++
			return transfer(ctx, tx)
		}, opts...)
		return n, err
	}}
}

func strategies() []strategy {
	// The schedule: full jitter over an exponential whose base is about the
	// time of one attempt (8 to 12 ms at 10 clients on the loaded 2-core
	// machine of docs/SQL.md), capped at 1 s. docs/SQL.md also shows a base
	// of 1 ms, which does worse.
	policy := retry.Exponential(ourBase).Cap(time.Second).FullJitter(nil).Take(maxRetries)
	return []strategy{
		// crdb.ExecuteTx's loop: try again at once.
		{"immediate", func(ctx context.Context, db *sql.DB, transfer func(context.Context, *sql.Tx) error) (int, error) {
			for n := 1; ; n++ {
				err := handTx(ctx, db, transfer)
				if err == nil || !contention(err) || n > maxRetries {
					return n, err
				}
			}
		}},
		// The loop users write: sleep a random time between d and 2d, d
		// doubling from 1 ms, with no cap.
		{"hand-doubling", func(ctx context.Context, db *sql.DB, transfer func(context.Context, *sql.Tx) error) (int, error) {
			d := time.Millisecond
			for n := 1; ; n++ {
				err := handTx(ctx, db, transfer)
				if err == nil || !contention(err) || n > maxRetries {
					return n, err
				}
				time.Sleep(d + rand.N(d))
				if d < time.Hour {
					d *= 2
				}
			}
		}},
		ours("ours-full-jitter", policy),
		// A budget shared by the clients: retries at most 20% of transfers,
		// past a reserve of 10.
		ours("ours-budget", policy, retry.WithBudget(retry.NewBudget(0.2, 10))),
	}
}

func BenchmarkTransfer(b *testing.B) {
	db := open(b, "pgx", "")
	acct := table(b, db, hotRows)
	sum := scalar(b, db, "SELECT sum(balance) FROM "+acct)
	transfer := func(ctx context.Context, tx *sql.Tx) error {
		from := 1 + rand.IntN(hotRows)
		to := 1 + (from+rand.IntN(hotRows-1))%hotRows
		var a, c int
		if err := tx.QueryRowContext(ctx, "SELECT balance FROM "+acct+" WHERE id = $1", from).Scan(&a); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT balance FROM "+acct+" WHERE id = $1", to).Scan(&c); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = $2 WHERE id = $1", from, a-1); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = $2 WHERE id = $1", to, c+1)
		return err
	}
	for _, clients := range []int{10, 50, 100} {
		for _, st := range strategies() {
			b.Run(fmt.Sprintf("clients=%d/%s", clients, st.name), func(b *testing.B) {
				runTransfers(b, db, clients, st, transfer)
			})
		}
	}
	if got := scalar(b, db, "SELECT sum(balance) FROM "+acct); got != sum {
		b.Errorf("sum of balances = %d, want %d: a transfer was applied twice or half", got, sum)
	}
}

// window is how long each sub-benchmark runs its clients: the -benchtime
// when it is a duration (1s by default), 200 ms for a count such as 1x (the
// CI's smoke run). Each sub-benchmark runs once (b.N is 1: the window is as
// long as -benchtime), and only its custom metrics mean anything.
func window() time.Duration {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return time.Second
	}
	v := f.Value.String()
	if strings.HasSuffix(v, "x") {
		return 200 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Second
	}
	return d
}

// runTransfers runs clients that each start transfers, one after the other,
// until the window ends, and reports the commits made within it per second,
// the p99 latency of every transfer that committed (those started in the
// window and finished after it included), the attempts per commit and the
// share of transfers given up.
func runTransfers(b *testing.B, db *sql.DB, clients int, st strategy, transfer func(context.Context, *sql.Tx) error) {
	db.SetMaxOpenConns(clients)
	db.SetMaxIdleConns(clients)
	// Open every client's connection before the clock starts.
	warm := make([]*sql.Conn, clients)
	for i := range warm {
		c, err := db.Conn(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		warm[i] = c
	}
	for _, c := range warm {
		c.Close()
	}
	var (
		inWindow, commits, attempts, failed, started atomic.Int64
		mu                                           sync.Mutex
		latencies                                    []time.Duration
		wg                                           sync.WaitGroup
	)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	end := start.Add(window())
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(end) {
				started.Add(1)
				t0 := time.Now()
				n, err := st.run(ctx, db, transfer)
				attempts.Add(int64(n))
				if err != nil {
					failed.Add(1)
					if !contention(err) {
						b.Errorf("%s: %v", st.name, err)
					}
					continue
				}
				t1 := time.Now()
				commits.Add(1)
				if !t1.After(end) {
					inWindow.Add(1)
				}
				mine = append(mine, t1.Sub(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(latencies)
	p99 := time.Duration(0)
	if len(latencies) > 0 {
		p99 = latencies[min(len(latencies)-1, len(latencies)*99/100)]
	}
	b.ReportMetric(float64(inWindow.Load())/end.Sub(start).Seconds(), "commits/s")
	b.ReportMetric(float64(p99)/1e6, "p99-ms")
	if c := commits.Load(); c > 0 {
		b.ReportMetric(float64(attempts.Load())/float64(c), "attempts/commit")
	}
	if n := started.Load(); n > 0 {
		b.ReportMetric(100*float64(failed.Load())/float64(n), "gaveup-%")
	}
}
