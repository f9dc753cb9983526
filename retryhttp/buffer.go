package retryhttp

import (
	"bytes"
	"io"
	"math"
	"net/http"
)

// bufferBody reads req's body, which has no GetBody, up to limit bytes and
// one more (see Transport.BufferBody). If it ends within limit, bufferBody
// closes it and returns a copy of req whose body is the bytes read, with
// GetBody. Otherwise it returns a copy to send once, whose body is the bytes
// read followed by the rest, or req itself if its ContentLength already says
// that the body is too long; once reports this. If reading fails, it closes
// the body and returns the error.
func bufferBody(req *http.Request, limit int64) (tmpl *http.Request, once bool, err error) {
	if req.ContentLength > limit {
		return req, true, nil
	}
	limit = min(limit, math.MaxInt64-1)
	buf := make([]byte, 0, min(limit+1, max(req.ContentLength+1, peekChunk)))
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
		n, err := req.Body.Read(buf[len(buf):min(int64(cap(buf)), limit+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			req.Body.Close()
			return nil, false, err
		}
	}
	r := new(http.Request)
	*r = *req
	if int64(len(buf)) > limit {
		r.Body = &prefixedBody{prefix: buf, ReadCloser: req.Body}
		return r, true, nil
	}
	req.Body.Close()
	if r.ContentLength <= 0 {
		r.ContentLength = int64(len(buf))
	}
	r.GetBody = func() (io.ReadCloser, error) {
		if len(buf) == 0 {
			return http.NoBody, nil
		}
		return io.NopCloser(bytes.NewReader(buf)), nil
	}
	r.Body, _ = r.GetBody()
	return r, false, nil
}

// prefixedBody is a request body that yields prefix, then the rest of its
// ReadCloser, which Close closes.
type prefixedBody struct {
	prefix []byte
	io.ReadCloser
}

func (b *prefixedBody) Read(p []byte) (int, error) {
	if len(b.prefix) > 0 {
		n := copy(p, b.prefix)
		b.prefix = b.prefix[n:]
		return n, nil
	}
	return b.ReadCloser.Read(p)
}
