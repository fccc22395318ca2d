package conversation_test

import (
	"context"
	"fmt"
	"log"

	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/tokenizer"
)

// Load vLLM's generate_multi_turn.json as it is (its text_files beside
// it) and look at the first conversation.
func ExampleLoad() {
	tok, err := tokenizer.Bundled(tokenizer.Llama3)
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()
	src := conversation.Source{Kind: conversation.KindSynthetic, Path: "generate_multi_turn.json"}
	convs, err := conversation.Load(context.Background(), src, "testdata", tok, 0)
	if err != nil {
		log.Fatal(err)
	}
	c := convs[0]
	fmt.Println(len(convs), "conversations; the first:", c.ID)
	for i, t := range c.Turns[1:3] {
		fmt.Printf("turn %d: %d tokens, max_tokens %d, %.58q...\n", i+1, t.UserTokens, t.MaxTokens, t.User)
	}
	// Output:
	// 24 conversations; the first: CONV_ID_0
	// turn 1: 159 tokens, max_tokens 110, "0 is a nice number... Please rewrite the following text an"...
	// turn 2: 144 tokens, max_tokens 115, "0 is a nice number... Please rewrite the following text an"...
}
