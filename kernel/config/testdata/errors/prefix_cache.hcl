model "openai" "zero" {
  prefix_cache_tokens = 0
}
model "openai" "negative" {
  prefix_cache_tokens = -4096
}
model "openai" "words" {
  prefix_cache_tokens = "lots"
}
model "openai" "slots" {
  server_slots = 0
}
