; Ferry's Windows installer (NSIS 3). Per-user: it installs into
; %LOCALAPPDATA%\Programs\Ferry and writes only to HKEY_CURRENT_USER, so it
; needs no administrator rights. scripts/package.sh builds it:
;
;   makensis -DVERSION=0.1.0 -DVERSION4=0.1.0.0 -DSRC=DIR -DOUTFILE=setup.exe ferry.nsi
;
; where DIR holds ferry.exe, ferry-cli.exe, ferry.ico, LICENSE.txt and
; THIRD_PARTY_LICENSES.txt.
;
; The install folder goes on the user's PATH (HKCU\Environment, the per-user
; part, no elevation), so `ferry-cli` works in a new terminal; the uninstaller
; takes it off again, and only if this installer put it there.
;
; Silent install: setup.exe /S [/AUTOSTART] [/D=C:\folder] (/D last, unquoted).
; The firewall rule is the one thing a per-user install cannot do by itself:
; Windows lets only administrators add one. When the user ticks that box the
; installer asks Windows to run netsh elevated, which shows the UAC prompt;
; if the user declines, nothing is added and the finish page says how to do it
; later. /FIREWALL on the command line ticks the box (and so shows the prompt).
; Uninstall: uninstall.exe [/S]. Settings, identity and history in %APPDATA%\Ferry
; stay, as do received files.

; A 64-bit installer for a 64-bit app (Ferry has no 32-bit build); it also
; runs under Debian's 64-bit-only Wine, where the packaging tests run it.
Target amd64-unicode
ManifestDPIAware true
RequestExecutionLevel user
SetCompressor /SOLID lzma
; Store no file times: the files get the install time, and two builds of the
; same files give the same installer (reproducible builds).
SetDateSave off
; A file that cannot be written stops the install rather than being skipped:
; skipped (NSIS's default, and what a silent install does without asking),
; the old program stayed under the new version's entry, reported a success.
AllowSkipFiles off

!include MUI2.nsh
!include FileFunc.nsh
!include LogicLib.nsh
!include Sections.nsh
!include StrFunc.nsh
!include WinMessages.nsh

; StrFunc's functions must be declared before use.
${StrStr}
${UnStrStr}
${UnStrRep}

!macro RequireDefine NAME
	!ifndef ${NAME}
		!error "define ${NAME} (makensis -D${NAME}=...; see the top of this file)"
	!endif
!macroend
!insertmacro RequireDefine VERSION
!insertmacro RequireDefine VERSION4
!insertmacro RequireDefine SRC
!insertmacro RequireDefine OUTFILE

!define UNINSTKEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\Ferry"
; The app's "Start Ferry when I log in" setting writes this same value
; (app/autostart), so the installer and the app can each undo what the other did.
!define RUNKEY "Software\Microsoft\Windows\CurrentVersion\Run"
!define RUNVALUE "Ferry"
!define STATEKEY "Software\Ferry"
!define FWRULE "Ferry"
!define FWRULECLI "Ferry (command line)"

Name "Ferry"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\Ferry"
InstallDirRegKey HKCU "${STATEKEY}" "InstallDir"
BrandingText "Ferry ${VERSION}"

VIProductVersion "${VERSION4}"
VIFileVersion "${VERSION4}"
VIAddVersionKey "ProductName" "Ferry"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "Ferry installer"
VIAddVersionKey "CompanyName" "Ferry developers"
VIAddVersionKey "LegalCopyright" "Ferry developers"

!define MUI_ICON "${SRC}\ferry.ico"
!define MUI_UNICON "${SRC}\ferry.ico"
!define MUI_COMPONENTSPAGE_SMALLDESC
!define MUI_FINISHPAGE_RUN "$INSTDIR\ferry.exe"
!define MUI_FINISHPAGE_RUN_TEXT "Start Ferry now"
!define MUI_FINISHPAGE_TEXT "$FinishText"

Var FinishText

!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

; FileInUse FILE VAR: VAR is 1 when FILE exists and cannot be opened for
; writing (a running program), else 0.
!macro FileInUse FILE VAR
	StrCpy ${VAR} 0
	${If} ${FileExists} "${FILE}"
		ClearErrors
		FileOpen $R8 "${FILE}" a
		${If} ${Errors}
			StrCpy ${VAR} 1
		${Else}
			FileClose $R8
		${EndIf}
	${EndIf}
!macroend

; CloseRunning closes a running ferry.exe or ferry-cli.exe of this install
; before their files are replaced or removed: Windows refuses to overwrite or
; delete a running program, and Ferry usually runs, in the tray, when an
; upgrade comes. It asks first (a silent install goes ahead), ends them with
; taskkill (by name: a portable copy running elsewhere ends too; a transfer
; under way resumes when Ferry starts again), and waits until the files are
; free; if they stay in use it stops with exit code 2.
!macro CloseRunningFunction UN
Function ${UN}CloseRunning
	!insertmacro FileInUse "$INSTDIR\ferry.exe" $R0
	!insertmacro FileInUse "$INSTDIR\ferry-cli.exe" $R1
	${If} $R0 == 0
	${AndIf} $R1 == 0
		Return
	${EndIf}
	MessageBox MB_OKCANCEL|MB_ICONINFORMATION "Ferry is running. It will be closed to go on; transfers under way resume when it starts again." /SD IDOK IDOK close_it
	SetErrorLevel 2
	Quit
	close_it:
	${If} $R0 == 1
		nsExec::Exec '"$SYSDIR\taskkill.exe" /F /IM ferry.exe'
		Pop $R2
	${EndIf}
	${If} $R1 == 1
		nsExec::Exec '"$SYSDIR\taskkill.exe" /F /IM ferry-cli.exe'
		Pop $R2
	${EndIf}
	StrCpy $R3 0
	wait_free:
		Sleep 250
		!insertmacro FileInUse "$INSTDIR\ferry.exe" $R0
		!insertmacro FileInUse "$INSTDIR\ferry-cli.exe" $R1
		${If} $R0 == 0
		${AndIf} $R1 == 0
			DetailPrint "Closed the running Ferry."
			Return
		${EndIf}
		IntOp $R3 $R3 + 1
		IntCmp $R3 40 0 wait_free
	MessageBox MB_OK|MB_ICONSTOP "Ferry could not be closed. Quit it (its tray menu has Quit) and try again." /SD IDOK
	SetErrorLevel 2
	Quit
FunctionEnd
!macroend
!insertmacro CloseRunningFunction ""
!insertmacro CloseRunningFunction "un."

Section "Ferry (required)" SecApp
	SectionIn RO
	Call CloseRunning
	SetOutPath "$INSTDIR"
	File "${SRC}\ferry.exe"
	File "${SRC}\ferry-cli.exe"
	File "${SRC}\LICENSE.txt"
	File "${SRC}\THIRD_PARTY_LICENSES.txt"
	WriteUninstaller "$INSTDIR\uninstall.exe"
	CreateShortcut "$SMPROGRAMS\Ferry.lnk" "$INSTDIR\ferry.exe" "" "$INSTDIR\ferry.exe" 0 SW_SHOWNORMAL "" "Send files to nearby devices"

	WriteRegStr HKCU "${STATEKEY}" "InstallDir" "$INSTDIR"
	WriteRegStr HKCU "${UNINSTKEY}" "DisplayName" "Ferry"
	WriteRegStr HKCU "${UNINSTKEY}" "DisplayVersion" "${VERSION}"
	WriteRegStr HKCU "${UNINSTKEY}" "Publisher" "Ferry developers"
	WriteRegStr HKCU "${UNINSTKEY}" "URLInfoAbout" "https://github.com/ferrydrop/ferry"
	WriteRegStr HKCU "${UNINSTKEY}" "DisplayIcon" "$INSTDIR\ferry.exe"
	WriteRegStr HKCU "${UNINSTKEY}" "InstallLocation" "$INSTDIR"
	WriteRegStr HKCU "${UNINSTKEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
	WriteRegStr HKCU "${UNINSTKEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
	WriteRegDWORD HKCU "${UNINSTKEY}" "NoModify" 1
	WriteRegDWORD HKCU "${UNINSTKEY}" "NoRepair" 1
	${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
	WriteRegDWORD HKCU "${UNINSTKEY}" "EstimatedSize" $0
	Call AddToPath
SectionEnd

; AddToPath appends $INSTDIR to the user's PATH unless it is there already.
; A PATH too long for NSIS's strings (NSIS_MAX_STRLEN) is left alone rather
; than cut: ReadRegStr fails on it, and writing back what it read would lose
; the rest.
Function AddToPath
	ClearErrors
	ReadRegStr $0 HKCU "Environment" "Path"
	${If} ${Errors}
		; Missing, or too long to read: tell the two apart.
		StrCpy $2 0
		path_enum:
			EnumRegValue $1 HKCU "Environment" $2
			StrCmp $1 "" path_missing
			StrCmp $1 "Path" path_toolong
			IntOp $2 $2 + 1
			Goto path_enum
		path_toolong:
			DetailPrint "Your PATH is too long to change here: add $INSTDIR to it to use ferry-cli from a terminal."
			Return
		path_missing:
		StrCpy $0 ""
	${EndIf}
	${StrStr} $1 ";$0;" ";$INSTDIR;"
	${If} $1 != ""
		Return
	${EndIf}
	${If} $0 == ""
		StrCpy $0 "$INSTDIR"
	${Else}
		StrCpy $0 "$0;$INSTDIR"
	${EndIf}
	WriteRegExpandStr HKCU "Environment" "Path" "$0"
	WriteRegDWORD HKCU "${STATEKEY}" "AddedToPath" 1
	DetailPrint "Added $INSTDIR to your PATH (new terminals find ferry-cli)."
	; Tell Explorer and running shells' parents that the environment changed.
	SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=5000
FunctionEnd

; un.RemoveFromPath takes $INSTDIR off the user's PATH if AddToPath put it
; there, leaving every other entry as it was; an empty PATH is removed.
Function un.RemoveFromPath
	ReadRegDWORD $1 HKCU "${STATEKEY}" "AddedToPath"
	${If} $1 != 1
		Return
	${EndIf}
	ClearErrors
	ReadRegStr $0 HKCU "Environment" "Path"
	${If} ${Errors}
		Return
	${EndIf}
	StrCpy $0 ";$0;"
	${UnStrStr} $1 $0 ";$INSTDIR;"
	${If} $1 == ""
		Return
	${EndIf}
	${UnStrRep} $0 $0 ";$INSTDIR;" ";"
	; Drop the separators added above.
	StrCpy $0 $0 "" 1
	StrCpy $0 $0 -1
	${If} $0 == ""
		DeleteRegValue HKCU "Environment" "Path"
	${Else}
		WriteRegExpandStr HKCU "Environment" "Path" "$0"
	${EndIf}
	SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=5000
FunctionEnd

Section /o "Start Ferry when I log in" SecAutostart
	WriteRegStr HKCU "${RUNKEY}" "${RUNVALUE}" '"$INSTDIR\ferry.exe" --minimized'
SectionEnd

Section /o "Allow Ferry through Windows Firewall (asks for administrator approval)" SecFirewall
	; One inbound rule per program, any port: Ferry listens on 47800 (UDP for
	; QUIC, TCP) or on a free port when that one is taken, and answers mDNS on
	; UDP 5353. Private and domain networks only: on a network Windows calls
	; Public, nearby devices stay blocked (the README says so).
	DetailPrint "Asking Windows to add the firewall rules (administrator approval)..."
	ClearErrors
	ExecShellWait "runas" "$SYSDIR\cmd.exe" '/c netsh advfirewall firewall add rule name="${FWRULE}" dir=in action=allow program="$INSTDIR\ferry.exe" enable=yes profile=private,domain & netsh advfirewall firewall add rule name="${FWRULECLI}" dir=in action=allow program="$INSTDIR\ferry-cli.exe" enable=yes profile=private,domain' SW_HIDE
	; Whether it worked: reading rules needs no elevation.
	nsExec::Exec '"$SYSDIR\netsh.exe" advfirewall firewall show rule name="${FWRULE}"'
	Pop $0
	${If} $0 == 0
		WriteRegDWORD HKCU "${STATEKEY}" "FirewallRule" 1
		DetailPrint "Firewall rules added."
	${Else}
		DetailPrint "The firewall rules were not added."
		StrCpy $FinishText "$FinishText$\r$\n$\r$\nThe firewall rule was not added (administrator approval was declined or failed). Windows will ask when Ferry first receives; choose Allow on private networks."
	${EndIf}
SectionEnd

!insertmacro MUI_FUNCTION_DESCRIPTION_BEGIN
	!insertmacro MUI_DESCRIPTION_TEXT ${SecApp} "The Ferry app, the ferry-cli command-line client, a Start menu entry and the uninstaller."
	!insertmacro MUI_DESCRIPTION_TEXT ${SecAutostart} "Start Ferry minimised to the tray when you log in, so it can receive. You can change this later in Ferry's Settings."
	!insertmacro MUI_DESCRIPTION_TEXT ${SecFirewall} "Add inbound rules for Ferry on private networks, so other devices can find and reach this one. Windows asks an administrator to approve it."
!insertmacro MUI_FUNCTION_DESCRIPTION_END

Function .onInit
	StrCpy $FinishText "Ferry ${VERSION} is installed. Find it in the Start menu."
	${GetParameters} $R0
	ClearErrors
	${GetOptions} $R0 "/AUTOSTART" $R1
	${IfNot} ${Errors}
		!insertmacro SelectSection ${SecAutostart}
	${EndIf}
	ClearErrors
	${GetOptions} $R0 "/FIREWALL" $R1
	${IfNot} ${Errors}
		!insertmacro SelectSection ${SecFirewall}
	${EndIf}
FunctionEnd

Section "Uninstall"
	Call un.CloseRunning
	Delete "$INSTDIR\ferry.exe"
	Delete "$INSTDIR\ferry-cli.exe"
	Delete "$INSTDIR\LICENSE.txt"
	Delete "$INSTDIR\THIRD_PARTY_LICENSES.txt"
	Delete "$INSTDIR\uninstall.exe"
	RMDir "$INSTDIR"
	Delete "$SMPROGRAMS\Ferry.lnk"
	DeleteRegValue HKCU "${RUNKEY}" "${RUNVALUE}"
	Call un.RemoveFromPath

	; Removing the firewall rules needs administrator approval again: ask,
	; but never in a silent uninstall (a rule for a deleted program is inert).
	ReadRegDWORD $0 HKCU "${STATEKEY}" "FirewallRule"
	${If} $0 == 1
	${AndIfNot} ${Silent}
		MessageBox MB_YESNO|MB_ICONQUESTION "Remove Ferry's Windows Firewall rules too? Windows will ask for administrator approval." IDNO fw_done
		ExecShellWait "runas" "$SYSDIR\cmd.exe" '/c netsh advfirewall firewall delete rule name="${FWRULE}" & netsh advfirewall firewall delete rule name="${FWRULECLI}"' SW_HIDE
		fw_done:
	${EndIf}

	DeleteRegKey HKCU "${UNINSTKEY}"
	DeleteRegKey HKCU "${STATEKEY}"
SectionEnd
