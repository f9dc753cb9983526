package retrygrpc

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// grpc-go's own service-config parsing tests, translated: each case names
// the test of grpc-go (v1.85.0, service_config_test.go and
// internal/serviceconfig/duration_test.go) it comes from. The configs are
// theirs; what is checked is ours: the same accept or reject, and, for an
// accepted config, the retry policies we read from it.
type parseCase struct {
	name    string // grpc-go's test, and the case
	js      string
	want    map[string]*methodPolicy
	wantErr string // a part of the error; "" when the config is valid
}

// fooBar is the methodConfig {"service": "foo", "method": "Bar"} with extra
// fields, as grpc-go's tests write it.
func fooBar(extra string) string {
	return `{"methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], ` + extra + `}]}`
}

func retryFoo(policy string) string {
	return `{"methodConfig": [{"name": [{"service": "foo"}], "retryPolicy": {` + policy + `}}]}`
}

var noPolicy = map[string]*methodPolicy{"/foo/Bar": {}}

var parseCases = []parseCase{
	{name: "TestParseLoadBalancer/round_robin", js: `{"loadBalancingPolicy": "round_robin", "methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], "waitForReady": true}]}`, want: noPolicy},
	{name: "TestParseLoadBalancer/policy_not_a_string", js: `{"loadBalancingPolicy": 1, "methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], "waitForReady": false}]}`, wantErr: "cannot unmarshal number"},
	{name: "TestParseNoLBConfigSupported/unknown_balancers", js: `{"loadBalancingConfig": [{"not_a_balancer1": {} }, {"not_a_balancer2": {}}]}`, wantErr: "no supported policies found"},
	{name: "TestParseNoLBConfigSupported/empty_list", js: `{"loadBalancingConfig": []}`, wantErr: "no supported policies found"},
	{name: "ours/loadBalancingConfig_pick_first", js: `{"loadBalancingConfig": [{"pick_first": {}}]}`, want: map[string]*methodPolicy{}},
	{name: "TestParseWaitForReady/true", js: fooBar(`"waitForReady": true`), want: noPolicy},
	{name: "TestParseWaitForReady/false", js: fooBar(`"waitForReady": false`), want: noPolicy},
	{name: "TestParseWaitForReady/malformed", js: `{"methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], "waitForReady": fall}, {"name": [{"service": "foo", "method": "Bar"}], "waitForReady": true}]}`, wantErr: "invalid character"},
	{name: "TestParseTimeOut/1s", js: fooBar(`"timeout": "1s"`), want: noPolicy},
	{name: "TestParseTimeOut/3c", js: fooBar(`"timeout": "3c"`), wantErr: "missing seconds unit"},
	{name: "TestParseTimeOut/3c_then_1s", js: `{"methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], "timeout": "3c"}, {"name": [{"service": "foo", "method": "Bar"}], "timeout": "1s"}]}`, wantErr: "missing seconds unit"},
	{name: "TestParseMsgSize/numbers", js: fooBar(`"maxRequestMessageBytes": 1024, "maxResponseMessageBytes": 2048`), want: noPolicy},
	{name: "TestParseMsgSize/strings", js: `{"methodConfig": [{"name": [{"service": "foo", "method": "Bar"}], "maxRequestMessageBytes": "1024", "maxResponseMessageBytes": "2048"}, {"name": [{"service": "foo", "method": "Bar"}], "maxRequestMessageBytes": 1024, "maxResponseMessageBytes": 2048}]}`, wantErr: "cannot unmarshal string"},
	{name: "TestParseDefaultMethodConfig/empty_name", js: `{"methodConfig": [{"name": [{}], "waitForReady": true}]}`, want: map[string]*methodPolicy{"": {}}},
	{name: "TestParseDefaultMethodConfig/null_service", js: `{"methodConfig": [{"name": [{"service": null}], "waitForReady": true}]}`, want: map[string]*methodPolicy{"": {}}},
	{name: "TestParseDefaultMethodConfig/empty_service", js: `{"methodConfig": [{"name": [{"service": ""}], "waitForReady": true}]}`, want: map[string]*methodPolicy{"": {}}},
	{name: "TestParseDefaultMethodConfig/method_only", js: `{"methodConfig": [{"name": [{"method": "Bar"}], "waitForReady": true}]}`, wantErr: "cannot combine empty 'service' and non-empty 'method'"},
	{name: "TestParseDefaultMethodConfig/empty_service_with_method", js: `{"methodConfig": [{"name": [{"service": "", "method": "Bar"}], "waitForReady": true}]}`, wantErr: "cannot combine empty 'service' and non-empty 'method'"},
	{name: "TestParseMethodConfigDuplicatedName", js: `{"methodConfig": [{"name": [{"service": "foo"}, {"service": "foo"}], "waitForReady": true}]}`, wantErr: "duplicated name"},
	{name: "TestParseRetryPolicy/valid", js: retryFoo(`"maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]`),
		want: map[string]*methodPolicy{"/foo/": {retry: &retryPolicy{maxAttempts: 2, initialBackoff: 2 * time.Second, maxBackoff: 10 * time.Second, backoffMultiplier: 2, codes: []codes.Code{codes.Unavailable}}}}},
	{name: "TestParseRetryPolicy/negative_maxAttempts", js: retryFoo(`"maxAttempts": -1, "initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]`), wantErr: "invalid retry policy (&{MaxAttempts:-1 InitialBackoff:2s MaxBackoff:10s BackoffMultiplier:2 RetryableStatusCodes:[Unavailable]}): "},
	{name: "TestParseRetryPolicy/missing_maxAttempts", js: retryFoo(`"initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]`), wantErr: "invalid retry policy"},
	{name: "TestParseRetryPolicy/zero_initialBackoff", js: retryFoo(`"maxAttempts": 2, "initialBackoff": "0s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]`), wantErr: "invalid retry policy"},
	{name: "TestParseRetryPolicy/zero_maxBackoff", js: retryFoo(`"maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "0s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]`), wantErr: "invalid retry policy"},
	{name: "TestParseRetryPolicy/zero_backoffMultiplier", js: retryFoo(`"maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 0, "retryableStatusCodes": ["UNAVAILABLE"]`), wantErr: "invalid retry policy"},
	{name: "TestParseRetryPolicy/no_retryable_codes", js: retryFoo(`"maxAttempts": 2, "initialBackoff": "2s", "maxBackoff": "10s", "backoffMultiplier": 2, "retryableStatusCodes": []`), wantErr: "invalid retry policy"},
	// grpc-go's TestRetryThrottling (test/retry_test.go) config, with its
	// capitalised keys and ".01s"; the end-to-end run is TestServiceConfigThrottlingLikeGRPC.
	{name: "TestRetryThrottling/config", js: `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}], "waitForReady": true, "retryPolicy": {"MaxAttempts": 4, "InitialBackoff": ".01s", "MaxBackoff": ".01s", "BackoffMultiplier": 1.0, "RetryableStatusCodes": [ "UNAVAILABLE" ]}}], "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5}}`,
		want: map[string]*methodPolicy{"/grpc.testing.TestService/": {retry: &retryPolicy{maxAttempts: 4, initialBackoff: 10 * time.Millisecond, maxBackoff: 10 * time.Millisecond, backoffMultiplier: 1, codes: []codes.Code{codes.Unavailable}}}}},
	// grpc-go's TestMaxCallAttempts (test/retry_test.go): maxAttempts above
	// 5 is cut to 5.
	{name: "TestMaxCallAttempts/cut_to_5", js: retryFoo(`"maxAttempts": 8, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": [14]`),
		want: map[string]*methodPolicy{"/foo/": {retry: &retryPolicy{maxAttempts: 5, initialBackoff: time.Second, maxBackoff: time.Second, backoffMultiplier: 1, codes: []codes.Code{codes.Unavailable}}}}},
	// Ours: what grpc-go's parseServiceConfig checks without a test of its own.
	{name: "ours/empty", js: ``, wantErr: "no JSON service config provided"},
	{name: "ours/maxTokens_0", js: `{"retryThrottling": {"maxTokens": 0, "tokenRatio": 0.1}}`, wantErr: "invalid retry throttling config: maxTokens (0) out of range (0, 1000]"},
	{name: "ours/maxTokens_1001", js: `{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0.1}}`, wantErr: "maxTokens (1001) out of range (0, 1000]"},
	{name: "ours/tokenRatio_0", js: `{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0}}`, wantErr: "invalid retry throttling config: tokenRatio (0) may not be negative"},
	{name: "ours/unknown_code", js: retryFoo(`"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": ["NOT_A_CODE"]`), wantErr: `invalid code: "\"NOT_A_CODE\""`},
	{name: "ours/code_17", js: retryFoo(`"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": [17]`), wantErr: "invalid code: 17"},
	// Ours: A6's hedgingPolicy, which grpc-go does not read.
	{name: "A6/hedging", js: `{"methodConfig": [{"name": [{"service": "foo", "method": "Get"}], "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.5s", "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL"]}}]}`,
		want: map[string]*methodPolicy{"/foo/Get": {hedge: &hedgingPolicy{maxAttempts: 3, delay: 500 * time.Millisecond, codes: []codes.Code{codes.Unavailable, codes.Internal}}}}},
	{name: "A6/hedging_no_delay_no_codes", js: `{"methodConfig": [{"name": [{"service": "foo"}], "hedgingPolicy": {"maxAttempts": 9}}]}`,
		want: map[string]*methodPolicy{"/foo/": {hedge: &hedgingPolicy{maxAttempts: 5}}}},
	{name: "A6/hedging_maxAttempts_1", js: `{"methodConfig": [{"name": [{"service": "foo"}], "hedgingPolicy": {"maxAttempts": 1}}]}`, wantErr: "invalid hedging policy"},
	{name: "A6/hedging_negative_delay", js: `{"methodConfig": [{"name": [{"service": "foo"}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "-1s"}}]}`, wantErr: "invalid hedging policy"},
	{name: "A6/both_policies", js: `{"methodConfig": [{"name": [{"service": "foo"}], "hedgingPolicy": {"maxAttempts": 2}, "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": [14]}}]}`, wantErr: "may not both be set"},
	{name: "A6/nameless_methodConfig_ignored", js: `{"methodConfig": [{"retryPolicy": {"maxAttempts": 0}}]}`, want: map[string]*methodPolicy{}},
}

func TestParseServiceConfig(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseServiceConfig(tc.js)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseServiceConfig(%s) = %v, want an error containing %q", tc.js, err, tc.wantErr)
				}
				if sc != nil {
					t.Errorf("got a config with the error")
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseServiceConfig(%s): %v", tc.js, err)
			}
			if !reflect.DeepEqual(sc.methods, tc.want) {
				t.Errorf("methods %s, want %s", dump(sc.methods), dump(tc.want))
			}
		})
	}
}

func dump(m map[string]*methodPolicy) string {
	var b strings.Builder
	for k, p := range m {
		fmt.Fprintf(&b, "%q: retry %+v hedge %+v; ", k, p.retry, p.hedge)
	}
	return b.String()
}

// TestDurationUnmarshal is grpc-go's TestDuration_MarshalUnmarshal
// (internal/serviceconfig/duration_test.go), its unmarshalling half.
func TestDurationUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: `"1s"`, want: time.Second},
		{in: `"-100.700s"`, want: -100*time.Second - 700*time.Millisecond},
		{in: `".050s"`, want: 50 * time.Millisecond},
		{in: `"-.001s"`, want: -time.Millisecond},
		{in: `"-0.200s"`, want: -200 * time.Millisecond},
		{in: `"9223372036s"`, want: 9223372036 * time.Second},
		{in: `"9223372037s"`, want: math.MaxInt64},
		{in: `"9223372036.854775807s"`, want: math.MaxInt64},
		{in: `"9223372036.854775808s"`, want: math.MaxInt64},
		{in: `"315576000000s"`, want: math.MaxInt64},
		{in: `"315576000001s"`, wantErr: "out of range"},
		{in: `"-9223372036s"`, want: -9223372036 * time.Second},
		{in: `"-9223372037s"`, want: math.MinInt64},
		{in: `"-9223372036.854775808s"`, want: math.MinInt64},
		{in: `"-9223372036.854775809s"`, want: math.MinInt64},
		{in: `"-315576000000s"`, want: math.MinInt64},
		{in: `"-315576000001s"`, wantErr: "out of range"},
		{in: `123s`, wantErr: "invalid character"},
		{in: `"5m"`, wantErr: "malformed duration"},
		{in: `"5.3.2s"`, wantErr: "malformed duration"},
		{in: `"x.3s"`, wantErr: "malformed duration"},
		{in: `"3.xs"`, wantErr: "malformed duration"},
		{in: `"3.1234567890s"`, wantErr: "malformed duration"},
		{in: `".s"`, wantErr: "malformed duration"},
		{in: `"s"`, wantErr: "malformed duration"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			d := jsonDuration(12345) // a value that must be replaced
			err := d.UnmarshalJSON([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("UnmarshalJSON(%s) = %v, %v; want an error containing %q", tc.in, time.Duration(d), err, tc.wantErr)
				}
				return
			}
			if err != nil || time.Duration(d) != tc.want {
				t.Fatalf("UnmarshalJSON(%s) = %v, %v; want %v", tc.in, time.Duration(d), err, tc.want)
			}
		})
	}
}

// FuzzParseServiceConfig: no text panics ParseServiceConfig, and every
// policy it accepts is within A6's bounds.
func FuzzParseServiceConfig(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.js)
	}
	f.Fuzz(func(t *testing.T, js string) {
		sc, err := ParseServiceConfig(js)
		if err != nil {
			return
		}
		for name, p := range sc.methods {
			if r := p.retry; r != nil && (r.maxAttempts < 2 || r.maxAttempts > 5 || r.initialBackoff <= 0 || r.maxBackoff <= 0 || len(r.codes) == 0) {
				t.Fatalf("%q: accepted %+v", name, r)
			}
			if h := p.hedge; h != nil && (h.maxAttempts < 2 || h.maxAttempts > 5 || h.delay < 0) {
				t.Fatalf("%q: accepted %+v", name, h)
			}
			s, _, _, ok := sc.MethodPolicy(name + "x")
			if ok {
				for d := range s {
					if d < 0 {
						t.Fatalf("negative delay %v", d)
					}
				}
			}
		}
	})
}
