package retrygrpc

import (
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// codecOf returns the codec with which a call made with opts encodes its
// messages, as gRPC chooses it: a forced codec (the last one given), else
// the codec registered for the content-subtype, else proto. It returns nil
// if no codec is registered for the content-subtype.
func codecOf(opts []grpc.CallOption) encoding.CodecV2 {
	var forced encoding.CodecV2
	subtype := "proto"
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.ForceCodecV2CallOption:
			forced = o.CodecV2
		case grpc.ForceCodecCallOption:
			forced = codecV1{o.Codec}
		case grpc.ContentSubtypeCallOption:
			subtype = strings.ToLower(o.ContentSubtype)
		}
	}
	if forced != nil {
		return forced
	}
	return encoding.GetCodecV2(subtype)
}

// codecV1 adapts a forced encoding.Codec to encoding.CodecV2.
type codecV1 struct{ c encoding.Codec }

func (c codecV1) Marshal(v any) (mem.BufferSlice, error) {
	b, err := c.c.Marshal(v)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (c codecV1) Unmarshal(data mem.BufferSlice, v any) error {
	return c.c.Unmarshal(data.Materialize(), v)
}

func (c codecV1) Name() string { return c.c.Name() }
