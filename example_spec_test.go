package retry_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleSpec() {
	// A flag with a default; -backoff on the command line replaces it.
	flags := flag.NewFlagSet("server", flag.ContinueOnError)
	flags.SetOutput(os.Stdout)
	backoff := retry.MustSpec("exponential(100ms).cap(2s).fulljitter.take(5)")
	flags.TextVar(&backoff, "backoff", backoff, "retry `schedule` for the users service")
	flags.PrintDefaults()
	flags.SetOutput(io.Discard) // Parse's usage message on error

	if err := flags.Parse([]string{"-backoff", "delays(10ms, 50ms).then(constant(1s).take(2))"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(backoff)
	fmt.Println(slices.Collect(backoff.Schedule().Seq()))

	// Bad text is an error that says where, and the flag keeps its value.
	err := flags.Parse([]string{"-backoff", "constant(1s).take(+3)"})
	fmt.Println(err)
	fmt.Println(backoff)
	// Output:
	//   -backoff schedule
	//     	retry schedule for the users service (default exponential(100ms).cap(2s).fulljitter.take(5))
	// delays(10ms, 50ms).then(constant(1s).take(2))
	// [10ms 50ms 1s 1s]
	// invalid value "constant(1s).take(+3)" for flag -backoff: retry: parse "constant(1s).take(+3)": column 19: invalid count "+3"
	// delays(10ms, 50ms).then(constant(1s).take(2))
}

func ExampleSpec_json() {
	var config struct {
		Backoff retry.Spec `json:"backoff"`
		Quick   retry.Spec `json:"quick"` // absent: the zero Spec, no retries
	}
	err := json.Unmarshal([]byte(`{"backoff": "Exponential(1s).Cap(3s).Take(4)"}`), &config)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(slices.Collect(config.Backoff.Schedule().Seq()))
	out, _ := json.Marshal(config) // the text as written, and the zero Spec's
	fmt.Println(string(out))

	err = json.Unmarshal([]byte(`{"backoff": "exponential(1s).cap(3)"}`), &config)
	fmt.Println(err)
	// Output:
	// [1s 2s 3s 3s]
	// {"backoff":"Exponential(1s).Cap(3s).Take(4)","quick":"delays()"}
	// retry: parse "exponential(1s).cap(3)": column 21: missing unit in duration "3"
}

func ExampleMustSpec() {
	// For defaults written in the program; text from outside goes through
	// Set or UnmarshalText, which return an error instead of panicking.
	quick := retry.MustSpec("constant(10ms).take(2)")
	fmt.Println(quick, slices.Collect(quick.Schedule().Seq()))
	defer func() { fmt.Println(recover()) }()
	retry.MustSpec("constant(10ms).tkae(2)")
	// Output:
	// constant(10ms).take(2) [10ms 10ms]
	// retry: MustSpec: parse "constant(10ms).tkae(2)": column 16: unknown combinator "tkae"
}
