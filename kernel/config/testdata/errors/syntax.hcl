model "openai" "local" {
  base_url = "http://x"
  max_tokens = 
}
