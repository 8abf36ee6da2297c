# shellcheck shell=bash
# pingpong         ping-pong on flat-1g: the one-way time and the rate should be the emulated cluster's fit
#                  (alpha 17.8 us, beta 8.64 ns/B; about 1 us more per message with computation simulated)

smpi_run flat-1g 2 "$out/pingpong.log" pingpong --max-bytes 16M --csv "$out/pingpong.csv"
