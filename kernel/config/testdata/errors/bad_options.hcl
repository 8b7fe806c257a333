task "t" "a" {
  huge = pow(10, 400) * pow(10, 400)
  fn   = abs("x")
}
