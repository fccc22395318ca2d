package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ardanlabs/jinja"

	"github.com/servegate/servegate/internal/tokenizer"
)

// A TokenizerConfig is the part of a model's tokenizer_config.json that
// datasets need: the chat template, the special tokens it refers to, and
// whether decoding cleans up spaces before punctuation.
//
// Chat templates are Jinja. They run on github.com/ardanlabs/jinja, a pure-Go
// Jinja engine written for Hugging Face chat templates (with transformers'
// trim_blocks and lstrip_blocks), so that prompts and their token counts
// match what vLLM computes with transformers' apply_chat_template, with no
// Python on the benchmark machine.
type TokenizerConfig struct {
	// Path is the file the config was read from, if any.
	Path string
	// ChatTemplate is the Jinja source of the default chat template.
	ChatTemplate string
	// BOSToken and EOSToken are the texts of the special tokens a template
	// may refer to as bos_token and eos_token.
	BOSToken, EOSToken string
	// CleanUpTokenizationSpaces applies transformers' clean-up (" ." to "."
	// and the like) after decoding, as the model's tokenizer does.
	CleanUpTokenizationSpaces bool

	once sync.Once
	tmpl *jinja.Template
	err  error
}

// A Message is one chat turn given to a chat template.
type Message struct {
	Role, Content string
}

// ReadTokenizerConfig reads a tokenizer_config.json. When the file has no
// chat_template, a chat_template.jinja beside it is used, as transformers
// does.
func ReadTokenizerConfig(path string) (*TokenizerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer config: %w", err)
	}
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		CleanUp      *bool           `json:"clean_up_tokenization_spaces"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("read tokenizer config: %s: %w", path, err)
	}
	c := &TokenizerConfig{Path: path, BOSToken: tokenText(raw.BOS), EOSToken: tokenText(raw.EOS)}
	if raw.CleanUp != nil {
		c.CleanUpTokenizationSpaces = *raw.CleanUp
	}
	if c.ChatTemplate, err = templateText(raw.ChatTemplate); err != nil {
		return nil, fmt.Errorf("read tokenizer config: %s: chat_template: %w", path, err)
	}
	if c.ChatTemplate == "" {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "chat_template.jinja")); err == nil {
			c.ChatTemplate = string(b)
		}
	}
	return c, nil
}

// configBeside reads tokenizer_config.json from the directory of a tokenizer
// file. A tokenizer loaded by hub model id is looked up in the local Hugging
// Face cache (the default Hub), whose snapshot holds the config when a
// Hugging Face tool downloaded the model. It returns nil when there is no
// config to find.
func configBeside(name string) (*TokenizerConfig, error) {
	path := name
	if st, err := os.Stat(name); err != nil || st.IsDir() {
		if path, err = (tokenizer.Hub{}).Locate(name); err != nil {
			return nil, nil
		}
	}
	cfg := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	if _, err := os.Stat(cfg); err != nil {
		return nil, nil
	}
	return ReadTokenizerConfig(cfg)
}

// tokenText reads a special token written either as a string or as an
// AddedToken object with a "content" field.
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}

// templateText reads chat_template written as a string or as a list of
// named templates, of which it takes "default".
func templateText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", errors.New("neither a string nor a list of named templates")
	}
	for _, t := range named {
		if t.Name == "default" {
			return t.Template, nil
		}
	}
	return "", errors.New("no template named \"default\"")
}

// ApplyChatTemplate renders messages with the chat template, as
// transformers' apply_chat_template(messages, tokenize=False) does.
func (c *TokenizerConfig) ApplyChatTemplate(messages []Message, addGenerationPrompt bool) (string, error) {
	if c == nil || c.ChatTemplate == "" {
		return "", errors.New("apply chat template: the tokenizer has no chat template (give a tokenizer_config.json with chat_template, or skip the chat template)")
	}
	c.once.Do(func() { c.tmpl, c.err = jinja.Compile(c.ChatTemplate) })
	if c.err != nil {
		return "", fmt.Errorf("apply chat template: compile: %w", c.err)
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := c.tmpl.Render(map[string]any{
		"messages":              msgs,
		"add_generation_prompt": addGenerationPrompt,
		"bos_token":             c.BOSToken,
		"eos_token":             c.EOSToken,
	})
	if err != nil {
		return "", fmt.Errorf("apply chat template: %w", err)
	}
	return out, nil
}

// userTurn renders one user message with the generation prompt, the way
// vLLM formats custom, spec_bench and sonnet prompts.
func (c *TokenizerConfig) userTurn(prompt string) (string, error) {
	return c.ApplyChatTemplate([]Message{{Role: "user", Content: prompt}}, true)
}

// cleanUpTokenization is transformers' clean_up_tokenization: the same
// replacements, applied one after another in the same order.
func cleanUpTokenization(s string) string {
	for _, p := range [][2]string{
		{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
	} {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return s
}
