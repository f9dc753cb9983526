package retryhttp

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeCounter is a body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed int
}

func (b *closeCounter) Close() error { b.closed++; return nil }

func respWith(r io.Reader) (*http.Response, *closeCounter) {
	body := &closeCounter{Reader: r}
	return &http.Response{StatusCode: 200, Body: body}, body
}

func TestPeekBody(t *testing.T) {
	const text = "0123456789abcdef"
	long := strings.Repeat(text, 200)
	for _, tt := range []struct {
		name string
		body string
		wrap func(io.Reader) io.Reader
		n    int
		want string
	}{
		{"shorter than n", text, nil, 100, text},
		{"exactly n", text, nil, len(text), text},
		{"longer than n", text, nil, 4, "0123"},
		{"one byte per read", text, iotest.OneByteReader, 10, "0123456789"},
		{"data with EOF", text, iotest.DataErrReader, 100, text},
		{"half reads", long, iotest.HalfReader, 1000, long[:1000]},
		{"empty", "", nil, 10, ""},
		{"over several chunks", long, nil, 3000, long[:3000]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tt.body)
			if tt.wrap != nil {
				r = tt.wrap(r)
			}
			resp, body := respWith(r)
			got, err := PeekBody(resp, tt.n)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.Equal(t, len(got), cap(got), "appending to the peek must not reach the body's bytes")
			again, err := PeekBody(resp, tt.n)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(again))
			assert.Zero(t, body.closed)

			all, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.True(t, string(all) == tt.body, "the body after a peek differs")
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, 1, body.closed)
		})
	}
}

func TestPeekBodyNothing(t *testing.T) {
	assert.NotPanics(t, func() {
		for _, resp := range []*http.Response{nil, {}, {Body: http.NoBody}} {
			got, err := PeekBody(resp, 10)
			assert.Nil(t, got)
			assert.NoError(t, err)
		}
	})
	resp, _ := respWith(strings.NewReader("abc"))
	for _, n := range []int{0, -1} {
		got, err := PeekBody(resp, n)
		assert.Nil(t, got)
		assert.NoError(t, err)
	}
	assert.IsType(t, &closeCounter{}, resp.Body, "a peek of nothing leaves the body alone")
}

func TestPeekBodyGrows(t *testing.T) {
	resp, _ := respWith(strings.NewReader("0123456789"))
	first, err := PeekBody(resp, 3)
	require.NoError(t, err)
	second, err := PeekBody(resp, 8)
	require.NoError(t, err)
	assert.Equal(t, "012", string(first), "an earlier peek is not overwritten")
	assert.Equal(t, "01234567", string(second))
	shorter, err := PeekBody(resp, 2)
	require.NoError(t, err)
	assert.Equal(t, "01", string(shorter))
	assert.Equal(t, "0123456789", readAll(t, resp))
}

func TestPeekBodyAfterRead(t *testing.T) {
	resp, _ := respWith(strings.NewReader("0123456789"))
	_, err := PeekBody(resp, 4)
	require.NoError(t, err)
	buf := make([]byte, 3)
	_, err = io.ReadFull(resp.Body, buf)
	require.NoError(t, err)
	assert.Equal(t, "012", string(buf))
	next, err := PeekBody(resp, 5)
	require.NoError(t, err)
	assert.Equal(t, "34567", string(next), "a peek shows the bytes not yet read")
	assert.Equal(t, "3456789", readAll(t, resp))
}

func TestPeekBodyError(t *testing.T) {
	errBroken := errors.New("connection broke")
	t.Run("before n bytes", func(t *testing.T) {
		resp, body := respWith(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errBroken)))
		got, err := PeekBody(resp, 10)
		assert.Equal(t, "abc", string(got))
		assert.ErrorIs(t, err, errBroken)
		all, err := io.ReadAll(resp.Body)
		assert.Equal(t, "abc", string(all), "the bytes before the error")
		assert.ErrorIs(t, err, errBroken, "then the error itself")
		_, err = resp.Body.Read(make([]byte, 1))
		assert.ErrorIs(t, err, errBroken, "and again")
		resp.Body.Close()
		assert.Equal(t, 1, body.closed)
	})
	t.Run("after n bytes", func(t *testing.T) {
		resp, _ := respWith(io.MultiReader(strings.NewReader("abcdef"), iotest.ErrReader(errBroken)))
		got, err := PeekBody(resp, 4)
		assert.Equal(t, "abcd", string(got))
		assert.NoError(t, err, "the error lies beyond the peek")
		all, err := io.ReadAll(resp.Body)
		assert.Equal(t, "abcdef", string(all))
		assert.ErrorIs(t, err, errBroken)
	})
}
