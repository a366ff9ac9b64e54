# Handoff latency and throughput against contention, from run_all.sh's handoff.dat:
#   gnuplot -e "datafile='handoff.dat'; outfile='handoff.png'; series=7; names='\"A b\" \"C d\"'" \
#           tools/bench/plot.gp
# handoff.dat has one block per database + mode (first line: its title, skipped), rows
# "processes median_us p99_us grants_per_second handoffs", "?" where there is no value.
# A median from fewer than 20 handoffs and a p99 from fewer than 100 are left out: when the
# releaser nearly always gets the lock back (SQLite), there are only a handful of handoffs.
if (!exists("datafile")) datafile = 'handoff.dat'
if (!exists("outfile")) outfile = 'handoff.png'
if (!exists("series")) series = 7
# The titles, one quoted word per block, in block order (each block's first line is skipped).
if (!exists("names")) names = ''
set key noautotitle

set terminal pngcairo size 1650,560 noenhanced font ',10'
set output outfile
set datafile missing '?'
set grid ytics mytics xtics lc rgb '#dddddd'
set logscale y
set xrange [1.5:8.5]
set xtics ('2' 2, '4' 4, '8' 8)
set xlabel 'processes contending for one lock'
unset key

# Server locks dashed, sqlock modes solid; one colour per database + mode.
# (run_all.sh writes the blocks in this order: PostgreSQL pg_advisory, unique_key,
# select_for_update; MariaDB mysql_get_lock, select_for_update; SQLite unique_key,
# select_for_update.)
array colours[7] = ['#1f77b4', '#2ca02c', '#d62728', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2']
do for [i=1:7] {
    eval sprintf("set style line %d lw 2 pt 7 ps 1.2 lc rgb '%s' dt %d", i, colours[i], (i == 1 || i == 4) ? 2 : 1)
}

set multiplot layout 1,3 title "sqlock lock handoff under contention (one run; compare the lines, not absolute values: 2 vCPUs shared by all processes and servers)"

set title 'handoff median (µs, log; left out: < 20 handoffs)'
set ylabel 'µs'
set yrange [10:100000]
plot for [i=0:series-1] datafile index i using 1:($5 >= 20 ? $2 : NaN) with linespoints ls ((i % 7) + 1)

set title 'handoff p99 (µs, log; left out: < 100 handoffs)'
plot for [i=0:series-1] datafile index i using 1:($5 >= 100 ? $3 : NaN) with linespoints ls ((i % 7) + 1)

set title 'grants per second (log)'
set ylabel 'grants/s'
set yrange [100:1000000]
set key top left vertical box opaque font ',9' samplen 3
plot for [i=0:series-1] datafile index i using 1:4 with linespoints ls ((i % 7) + 1) title word(names, i + 1)

unset multiplot
