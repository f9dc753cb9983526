package retryhttp

import (
	"io"
	"net/http"
)

// peekChunk is the size of PeekBody's first read, and of each growth of its
// buffer after that (doubling), so that a large n costs memory only for the
// bytes the body really has.
const peekChunk = 512

// PeekBody returns the next n bytes of resp's body, or all that is left if
// the body ends first, without consuming them: it reads them into memory and
// replaces resp.Body with a body that yields them again, then the rest, then
// the body's own end or error, and closes the original when closed. Reading
// resp.Body afterwards gives exactly what it would have given without the
// peek. It is meant for a Transport's ShouldRetry, to look at a response's
// payload before deciding, but works on any response whose body is read
// only; the replacement body has just Read and Close, so don't peek at the
// writable body of a 101 Switching Protocols.
//
// The end of the body is not an error: a body shorter than n comes back
// whole with a nil error. If reading fails, PeekBody returns the bytes read
// and the error, and resp.Body yields those bytes and then that error. It
// returns nil and no error if n ≤ 0 or resp or its Body is nil or
// http.NoBody. Peeking again returns the same bytes, and more if n is
// larger. The returned slice must not be modified: it is what resp.Body
// will yield.
//
// PeekBody blocks until n bytes, the end or an error arrive: keep n small
// (a few KiB), since the bytes stay in memory until they are read, and note
// that under a Transport, retry.AttemptTimeout bounds the wait. Like any
// read of the body, it must not run concurrently with another.
func PeekBody(resp *http.Response, n int) ([]byte, error) {
	if n <= 0 || resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return nil, nil
	}
	pb, ok := resp.Body.(*peekedBody)
	if !ok {
		pb = &peekedBody{rc: resp.Body}
		resp.Body = pb
	}
	return pb.peek(n)
}

// peekedBody is a body whose next bytes have been read ahead: Read yields
// buf[off:], then err if the read-ahead met one, then the rest of rc.
type peekedBody struct {
	rc  io.ReadCloser
	buf []byte
	off int
	err error // what ended the read-ahead, io.EOF included; sticky
}

// peek reads ahead until n bytes are buffered past off, or the body ends or
// fails. Bytes already handed out are never overwritten: buf grows into new
// arrays, never compacts, so slices from earlier peeks stay as they were.
func (b *peekedBody) peek(n int) ([]byte, error) {
	for len(b.buf)-b.off < n && b.err == nil {
		if len(b.buf) == cap(b.buf) {
			grown := make([]byte, len(b.buf), len(b.buf)+min(max(cap(b.buf), peekChunk), n-(len(b.buf)-b.off)))
			copy(grown, b.buf)
			b.buf = grown
		}
		m, err := b.rc.Read(b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+m]
		b.err = err
	}
	p := b.buf[b.off:]
	if len(p) >= n {
		return p[:n:n], nil
	}
	if b.err == io.EOF {
		return p[:len(p):len(p)], nil
	}
	return p[:len(p):len(p)], b.err
}

func (b *peekedBody) Read(p []byte) (int, error) {
	if b.off < len(b.buf) {
		n := copy(p, b.buf[b.off:])
		b.off += n
		return n, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rc.Read(p)
}

func (b *peekedBody) Close() error {
	return b.rc.Close()
}
