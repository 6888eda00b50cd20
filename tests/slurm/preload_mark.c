/* A library the Slurm tests preload (as the site's first entry, and as the
 * user's own LD_PRELOAD): it only has to be loaded, which /proc/PID/maps
 * shows by its name. */
int fabtrace_slurm_preload_mark = 1;
