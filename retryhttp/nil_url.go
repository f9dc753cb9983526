package retryhttp

import "errors"

// errNilURL is what RoundTrip returns for a request without a URL, in the
// words of http.Transport, in every mode of the Transport.
var errNilURL = errors.New("http: nil Request.URL")
