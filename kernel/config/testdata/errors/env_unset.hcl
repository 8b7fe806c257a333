store = env("HAYLOFT_TEST_STORE")
task "niah" "small" {
  haystack = env("NOPE")
  model    = env("OPENAI_API_KEY")
}
