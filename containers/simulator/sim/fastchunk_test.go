package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChunkWriterMatchesMarshal: the spliced chunks are byte for byte what
// marshalling the wire structs gives.
func TestChunkWriterMatchesMarshal(t *testing.T) {
	s := &Server{p: testParams(), vocab: &vocab{texts: map[int]string{1: " a\"b", 2: " café"}}}
	for _, chat := range []bool{false, true} {
		for _, continuous := range []bool{false, true} {
			for _, finish := range []string{"", "length", "stop"} {
				j := &job{chat: chat, continuous: continuous, id: "cmpl-x<&>", created: 1764412800, prompt: make([]int, 17)}
				cw := s.newChunkWriter(j)
				t.Run(fmt.Sprint(chat, continuous, finish), func(t *testing.T) {
					want := "data: " + string(marshal(s.contentChunk(j, []int{1, 2}, finish, 5))) + "\n\n"
					require.Equal(t, want, string(cw.chunk(s.vocab.text([]int{1, 2}), finish, 5)))
				})
			}
		}
	}
}
