/*
 * A stand-in for Windows' bcryptprimitives.dll, for running Ferry's Windows
 * binaries under Wine 8 in tests only (never shipped). Go >= 1.22 gets its
 * random bytes from ProcessPrng in this DLL, which Wine 8 lacks; this one
 * fills the buffer from RtlGenRandom (SystemFunction036 in advapi32).
 * Built by the packaging tests with x86_64-w64-mingw32-gcc and the .def file
 * next to it, and copied into the test's WINEPREFIX.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
