// Package pgtest starts a throwaway PostgreSQL cluster for the tests and
// benchmarks of this module: initdb in a temporary directory, a postgres
// listening on a free loopback port, everything removed by Stop.
package pgtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running throwaway cluster.
type Cluster struct {
	dir  string
	port int
	cmd  *exec.Cmd
	exit chan error
}

// DSN returns a connection string for the superuser postgres on the
// database postgres.
func (c *Cluster) DSN() string { return dsn(c.Addr()) }

// dsn is the connection string of the superuser postgres on the database
// postgres at addr (host:port).
func dsn(addr string) string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr)
}

// Addr returns the cluster's host:port.
func (c *Cluster) Addr() string { return "127.0.0.1:" + strconv.Itoa(c.port) }

// bindir finds the directory of initdb and postgres: $PG_BINDIR, then PATH,
// then Debian's /usr/lib/postgresql/<version>/bin (the newest).
func bindir() (string, error) {
	if d := os.Getenv("PG_BINDIR"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if q, err := exec.LookPath("postgres"); err == nil && filepath.Dir(p) == filepath.Dir(q) {
			return filepath.Dir(p), nil
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb found (install Debian's postgresql package)")
}

func version(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// Start initialises and starts a cluster allowing maxConns connections.
// initdb and postgres refuse to run as root: as root, they run as the user
// postgres (or nobody).
func Start(maxConns int) (*Cluster, error) {
	bin, err := bindir()
	if err != nil {
		return nil, err
	}
	// As root, the cluster's directory is made in /tmp, which every user can
	// reach ($TMPDIR may be private to root).
	parent := ""
	if os.Geteuid() == 0 {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "retrysql-pg-")
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred, err = unprivileged()
		if err == nil {
			err = os.Chown(dir, int(cred.Uid), int(cred.Gid))
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v %s", err, lastLine(out))
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{dir: dir, port: port, exit: make(chan error, 1)}
	log, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir, "-c", "max_connections="+strconv.Itoa(maxConns),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "deadlock_timeout=50ms")
	c.cmd.Stdout, c.cmd.Stderr = log, log
	// Pdeathsig: the cluster goes when the test binary dies, even killed.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if err := c.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("postgres: %v", err)
	}
	go func() { c.exit <- c.cmd.Wait() }()
	if err := c.waitReady(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, c.DSN())
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case werr := <-c.exit:
			c.exit <- werr
			b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
			return fmt.Errorf("postgres exited (%v): %s", werr, lastLine(b))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %v: %v", limit, err)
		}
	}
}

// Stop shuts the cluster down (fast shutdown) and removes its directory.
func (c *Cluster) Stop() {
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.exit:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exit
		}
	}
	os.RemoveAll(c.dir)
}

func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no user postgres or nobody to run PostgreSQL as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// The cluster of this test binary, started by Main: nil when none could be
// started, and then noPG says why.
var (
	running *Cluster
	noPG    string
)

// Main runs the tests of a package that needs a cluster: it starts one
// allowing maxConns connections, runs m, fails the run if a goroutine the
// tests started is left behind (see leakChecked), and stops the cluster.
// Without a cluster the tests that need one skip (see Need), or, with CI
// set, the run fails.
func Main(m *testing.M, maxConns int) int {
	run := leakChecked(m)
	cl, err := Start(maxConns)
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintf(os.Stderr, "pgtest: CI is set and no PostgreSQL could be started: %v\n", err)
			return 1
		}
		noPG = "no PostgreSQL could be started: " + err.Error()
		fmt.Fprintln(os.Stderr, "pgtest: skipping the database tests:", noPG)
		// The examples of Tx need the database and cannot skip: leave them out.
		if f := flag.Lookup("test.skip"); f != nil && f.Value.String() == "" {
			_ = f.Value.Set("^ExampleTx")
		}
		return run()
	}
	running = cl
	defer cl.Stop()
	return run()
}

// Running returns the cluster Main started, for the examples (which Main
// leaves out when there is none).
func Running() *Cluster { return running }

// Need returns the cluster Main started, or skips t, saying why, when none
// could be started.
func Need(t testing.TB) *Cluster {
	t.Helper()
	if running == nil {
		t.Skip(noPG)
	}
	return running
}

// ConnString returns a connection string for the superuser postgres on the
// database postgres at addr (host:port: a Proxy in front of the cluster), or
// on the cluster itself when addr is "". It skips t as Need does.
func ConnString(t testing.TB, addr string) string {
	t.Helper()
	c := Need(t)
	if addr == "" {
		addr = c.Addr()
	}
	return dsn(addr)
}

var tables atomic.Int32

// Accounts creates, through exec, a table of n accounts (id, balance), each
// with a balance of 100, named uniquely in this process, drops it after t,
// and returns its name.
func Accounts(t testing.TB, n int, exec func(q string) error) string {
	t.Helper()
	name := fmt.Sprintf("acct_%d_%d", os.Getpid(), tables.Add(1))
	for _, q := range []string{
		"CREATE TABLE " + name + " (id int PRIMARY KEY, balance int NOT NULL)",
		fmt.Sprintf("INSERT INTO %s SELECT g, 100 FROM generate_series(1, %d) g", name, n),
	} {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _ = exec("DROP TABLE " + name) })
	return name
}
