package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChunkWriterMatchesMarshal: the spliced chunks are byte for byte what
// marshalling the wire structs gives, for every choice index, with and
// without logprobs.
func TestChunkWriterMatchesMarshal(t *testing.T) {
	v := &vocab{ids: []int{1, 2, 3, 4}, texts: map[int]string{1: " a\"b", 2: " café", 3: " x\tz", 4: " <&>"}}
	s := &Server{p: testParams(), vocab: v}
	ids := []int{1, 2}
	for _, chat := range []bool{false, true} {
		for _, continuous := range []bool{false, true} {
			for _, finish := range []string{"", "length", "stop"} {
				for _, index := range []int{0, 1, 12} {
					for _, logprobs := range []bool{false, true} {
						j := &job{chat: chat, continuous: continuous, id: "cmpl-x<&>", created: 1764412800, prompt: make([]int, 17), logprobs: logprobs, topK: 2}
						cw := s.newChunkWriter(j, index)
						t.Run(fmt.Sprint(chat, continuous, finish, index, logprobs), func(t *testing.T) {
							var lp any
							var lpJSON []byte
							if logprobs {
								g := newLogprobSampler(v, 7, false)
								if chat {
									lp = v.chatLogprobsOf(g, ids, j.topK)
								} else {
									lp, _ = v.completionLogprobsOf(g, ids, j.topK, 3)
								}
								lpJSON = marshal(lp)
							}
							want := "data: " + string(marshal(s.contentChunk(j, index, ids, lp, finish, 5))) + "\n\n"
							require.Equal(t, want, string(cw.chunk(v.text(ids), lpJSON, finish, 5)))
						})
					}
				}
			}
		}
	}
}

// TestLogprobsAppendMatchesMarshal: the stream's logprobs appenders write
// what marshalling the same values gives, for plain words and for tokens
// the encoder has to escape, for 0 to 5 alternatives.
func TestLogprobsAppendMatchesMarshal(t *testing.T) {
	v := &vocab{ids: []int{1, 2, 3, 4, 5, 6, 7}, texts: map[int]string{1: " a\"b", 2: " café", 3: " x\tz", 4: " <&>", 5: " plain", 6: " back\\slash", 7: " word"}}
	ids := []int{5, 1, 2, 3, 4, 6, 7, 5}
	for k := range 6 {
		for _, greedy := range []bool{false, true} {
			chat := v.chatLogprobsOf(newLogprobSampler(v, uint64(k), greedy), ids, k)
			require.Equal(t, string(marshal(chat)), string(chat.append(nil)), "chat, k=%d", k)
			comp, _ := v.completionLogprobsOf(newLogprobSampler(v, uint64(k), greedy), ids, k, 3)
			require.Equal(t, string(marshal(comp)), string(comp.append([]byte("x"))[1:]), "completion, k=%d", k)
		}
	}
	empty := v.chatLogprobsOf(newLogprobSampler(v, 1, false), nil, 2)
	require.Equal(t, string(marshal(empty)), string(empty.append(nil)))
}
