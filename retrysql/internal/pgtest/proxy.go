package pgtest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy is a TCP proxy in front of a cluster that can lose a connection
// right after forwarding a COMMIT, before the server's answer comes back:
// the server commits, the client never learns it.
type Proxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	// Dropped counts the connections dropped after a COMMIT.
	Dropped atomic.Int32
	// Answered receives once the server answered a dropped COMMIT (to no
	// one): the server finished it.
	Answered chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

// NewProxy starts a proxy to target (host:port) on a free loopback port.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, Answered: make(chan struct{}, 8)}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// DropNextCommit makes the proxy drop the connection that next sends a
// message containing COMMIT, right after forwarding it.
func (p *Proxy) DropNextCommit() { p.armed.Store(true) }

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		mute := new(atomic.Bool)
		p.wg.Add(2)
		go func() { defer p.wg.Done(); p.clientToServer(client, server, mute) }()
		go func() { defer p.wg.Done(); p.serverToClient(server, client, mute) }()
	}
}

var commit = []byte("commit")

// clientToServer forwards the client's bytes. After a COMMIT it closes only
// the client's side: the server's answer then fails to reach the client, and
// the other direction closes the server's side once the server has answered,
// so the server always finishes the COMMIT (an early reset could abort it).
func (p *Proxy) clientToServer(client, server net.Conn, mute *atomic.Bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			drop := p.armed.Load() && bytes.Contains(bytes.ToLower(buf[:n]), commit) && p.armed.CompareAndSwap(true, false)
			if drop {
				// Nothing the server says from now on reaches the client.
				p.Dropped.Add(1)
				mute.Store(true)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				client.Close()
				server.Close()
				return
			}
			if drop {
				client.Close()
				return
			}
		}
		if err != nil {
			client.Close()
			server.Close()
			return
		}
	}
}

// serverToClient forwards the server's bytes until mute is set; then it
// reads the server's answer and drops it, and closes both sides when the
// server's side ends (it is closed by the server or by Close).
func (p *Proxy) serverToClient(server, client net.Conn, mute *atomic.Bool) {
	defer server.Close()
	defer client.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 && !mute.Load() {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if mute.Load() {
			client.Close()
			if n > 0 {
				select {
				case p.Answered <- struct{}{}:
				default:
				}
				return
			}
		}
		if err != nil {
			return
		}
	}
}
