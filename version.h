/*
 * bufsel's version, written here and nowhere else: the launcher's --version,
 * the library's exit line at BUFSEL_LOG=info, the man pages' footers and
 * make deb's package version all read it from this line.
 */
#ifndef BUFSEL_VERSION_H
#define BUFSEL_VERSION_H

#define BUFSEL_VERSION "0.2.0"

#endif
