"""warpspeed/web: the web calculator's parser, page logic, links, Panel page
and the browser end to end."""
