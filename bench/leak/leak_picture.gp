# The leak picture (bench/leak/leak_sweep.sh): rows of PGM strips stacked top to bottom at one screen pixel per
# picture pixel, each named on its left. Variables: out (PNG), title, rows ("LABEL=PATH LABEL=PATH ...", top first),
# and every strip's width w, height h and header bytes skip (the strips are leak_images' PictureGrid, all alike).
n = words(rows)
label_w = 120.0
title_h = 30.0
W = w + label_w
H = n * h + title_h
set terminal pngcairo size W, H font "sans,11" background "white"
set output out
set lmargin at screen label_w / W
set rmargin at screen 1
set tmargin at screen 1 - title_h / H
set bmargin at screen 0
unset border; unset xtics; unset ytics; unset colorbox; unset key
set palette gray
set cbrange [0:255]
set xrange [0:w]
set yrange [0:n * h]
set title title font "sans,11"
label_of(s) = s[1:strstrt(s, "=") - 1]
path_of(s) = s[strstrt(s, "=") + 1:]
do for [i = 1:n] {
  set label i label_of(word(rows, i)) at -8, (n - i + 0.5) * h right front
}
plot for [i = 1:n] path_of(word(rows, i)) binary array=(w, h) skip=skip format='%uchar' origin=(0, (n - i) * h) \
  flipy with image
