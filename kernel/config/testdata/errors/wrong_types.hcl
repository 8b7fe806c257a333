concurrency = 0
log_level   = "verbose"
model "openai" "local" {
  max_concurrency = "many"
  context_window  = -1
  temperature     = "hot"
  top_p           = 1.5
  max_tokens      = 2.5
  stop            = "</s>"
  seed            = [1]
  plugin          = ["a"]
}
plugin "p" {
  sha256 = "abc"
}
