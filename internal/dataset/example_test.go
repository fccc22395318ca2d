package dataset_test

import (
	"context"
	"fmt"
	"log"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

func ExampleLoad() {
	path, err := fixtures.TokenizerPath(fixtures.Llama3)
	if err != nil {
		log.Fatal(err)
	}
	tok, err := tokenizer.FromFile(path)
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()
	samples, err := dataset.Load(context.Background(), dataset.Spec{
		Name:       dataset.Random,
		NumPrompts: 3,
		Seed:       42,
		Random:     dataset.RandomParams{InputLen: 64, OutputLen: 32},
	}, tok)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range samples {
		fmt.Println(s.RequestID, s.PromptLen, s.OutputLen)
	}
	// Output:
	// 0 63 32
	// 1 63 32
	// 2 63 32
}
