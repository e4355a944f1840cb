/* SPDX-License-Identifier: MIT */
/* Unsafe libc calls are banned in govex's own code, as git does. */
#ifndef GOVEX_BANNED_H
#define GOVEX_BANNED_H

#define GOVEX__BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) GOVEX__BANNED(strcpy)
#undef strcat
#define strcat(x, y) GOVEX__BANNED(strcat)
#undef sprintf
#define sprintf(...) GOVEX__BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) GOVEX__BANNED(vsprintf)
#undef strtok
#define strtok(x, y) GOVEX__BANNED(strtok)
#undef atoi
#define atoi(x) GOVEX__BANNED(atoi)
#undef atol
#define atol(x) GOVEX__BANNED(atol)
#undef system
#define system(x) GOVEX__BANNED(system)
#undef popen
#define popen(x, y) GOVEX__BANNED(popen)
#undef gets
#define gets(x) GOVEX__BANNED(gets)

#endif
