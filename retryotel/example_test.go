package retryotel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// A call that fails twice and then succeeds, recorded with retryotel and
// printed by the stdout exporter. So that the output is the same on every
// run, the exporter prints no timestamps, the resource is empty, and views
// keep two counters with one data point each (the SDK prints a metric's
// points in no set order): the calls by reason, and the attempts with
// retry.dependency alone, which sums them over their outcomes.
func Example() {
	exporter, err := stdoutmetric.New(stdoutmetric.WithWriter(os.Stdout), stdoutmetric.WithoutTimestamps(), stdoutmetric.WithPrettyPrint())
	if err != nil {
		panic(err)
	}
	keep := func(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
		switch i.Name {
		case retryotel.MetricCalls:
			return sdkmetric.Stream{Name: i.Name, Description: i.Description, Unit: i.Unit}, true
		case retryotel.MetricAttempts:
			return sdkmetric.Stream{Name: i.Name, Description: i.Description, Unit: i.Unit,
				AttributeFilter: attribute.NewAllowKeysFilter(retryotel.AttrDependency)}, true
		}
		return sdkmetric.Stream{Aggregation: sdkmetric.AggregationDrop{}}, true
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(resource.Empty()), sdkmetric.WithView(keep))
	tel, err := retryotel.New("payments", retryotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}

	calls := 0
	err = retry.Do(context.Background(), retry.Constant(time.Second).Take(3), func(context.Context) error {
		calls++
		if calls < 3 {
			return context.DeadlineExceeded
		}
		return nil
	}, append(tel.Options(), retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))...)
	fmt.Println("err:", err)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	if err := exporter.Export(context.Background(), &rm); err != nil && !errors.Is(err, context.Canceled) {
		panic(err)
	}
	// Output:
	// err: <nil>
	// {
	// 	"Resource": null,
	// 	"ScopeMetrics": [
	// 		{
	// 			"Scope": {
	// 				"Name": "github.com/seed-b8c8f69d/retry/retryotel",
	// 				"Version": "",
	// 				"SchemaURL": "",
	// 				"Attributes": null
	// 			},
	// 			"Metrics": [
	// 				{
	// 					"Name": "retry.attempts",
	// 					"Description": "Attempts made, by outcome.",
	// 					"Unit": "{attempt}",
	// 					"Data": {
	// 						"DataPoints": [
	// 							{
	// 								"Attributes": [
	// 									{
	// 										"Key": "retry.dependency",
	// 										"Value": {
	// 											"Type": "STRING",
	// 											"Value": "payments"
	// 										}
	// 									}
	// 								],
	// 								"StartTime": "0001-01-01T00:00:00Z",
	// 								"Time": "0001-01-01T00:00:00Z",
	// 								"Value": 3
	// 							}
	// 						],
	// 						"Temporality": "CumulativeTemporality",
	// 						"IsMonotonic": true
	// 					}
	// 				},
	// 				{
	// 					"Name": "retry.calls",
	// 					"Description": "Calls ended, by the reason they ended.",
	// 					"Unit": "{call}",
	// 					"Data": {
	// 						"DataPoints": [
	// 							{
	// 								"Attributes": [
	// 									{
	// 										"Key": "retry.dependency",
	// 										"Value": {
	// 											"Type": "STRING",
	// 											"Value": "payments"
	// 										}
	// 									},
	// 									{
	// 										"Key": "retry.reason",
	// 										"Value": {
	// 											"Type": "STRING",
	// 											"Value": "success"
	// 										}
	// 									}
	// 								],
	// 								"StartTime": "0001-01-01T00:00:00Z",
	// 								"Time": "0001-01-01T00:00:00Z",
	// 								"Value": 1
	// 							}
	// 						],
	// 						"Temporality": "CumulativeTemporality",
	// 						"IsMonotonic": true
	// 					}
	// 				}
	// 			]
	// 		}
	// 	]
	// }
}
