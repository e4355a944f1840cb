# SPDX-License-Identifier: MIT
# bash completion for govex(1).  The commands, each command's options, what an option's
# value is and a module's functions come from the binary being completed (govex
# __complete, govex(1) FILES), which reads the one option table its parser
# reads: they cannot drift from it.  Needs no bash-completion helpers.

# Fills COMPREPLY with the words a command prints (one a line) that start with $1.
_govex_words()
{
	local cur=$1 w
	shift
	COMPREPLY=()
	while IFS= read -r w; do
		[[ $w == "$cur"* ]] && COMPREPLY+=("$w")
	done < <("$@" 2>/dev/null)
}

# Files (or, with -d, directories) starting with $1.
_govex_files()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen "${2:--f}" -- "$1")
}

# What a call's FILE can be: a .py, a .ipynb or a directory on the way to one; no space
# after it, so that ":FUNCTION" can follow.
_govex_sources()
{
	local f
	compopt -o filenames -o nospace 2>/dev/null
	COMPREPLY=()
	while IFS= read -r f; do
		[[ -d $f || $f == *.py || $f == *.ipynb ]] && COMPREPLY+=("$f")
	done < <(compgen -f -- "$1")
}

# FILE.py:FUNCTION, the word being completed in full (COMP_WORDS splits it at the colon
# when COMP_WORDBREAKS has one, as it has by default): FILE's functions.
_govex_functions()
{
	local govex=$1 word=$2 file func n
	file=${word%:*} func=${word##*:}
	[[ $file == "~/"* ]] && file=$HOME/${file#"~/"}
	_govex_words "$func" "$govex" __complete functions "$file"
	if [[ $COMP_WORDBREAKS != *:* ]]; then
		# the reply replaces the whole word
		for n in "${!COMPREPLY[@]}"; do
			COMPREPLY[n]=${word%:*}:${COMPREPLY[n]}
		done
	fi
}

_govex()
{
	local govex=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]}
	local cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]} prev=
	((cword > 0)) && prev=${COMP_WORDS[cword - 1]}
	# --opt=value: COMP_WORDBREAKS makes "--opt" "=" "value" of it
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((cword > 1)); then
		prev=${COMP_WORDS[cword - 2]}
	fi
	# the word under the cursor as typed, colons and all
	local line=${COMP_LINE:0:COMP_POINT}
	local word=${line##*[[:space:]]}
	COMPREPLY=()
	if ((cword == 1)); then
		if [[ $cur == -* ]]; then
			_govex_words "$cur" "$govex" __complete options
			COMPREPLY=("${COMPREPLY[@]%% *}")
		else
			_govex_words "$cur" "$govex" __complete commands
		fi
		return 0
	fi
	# exec's "--": the program, then its arguments
	local i
	for ((i = 2; i < cword; i++)); do
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			if ((i == cword - 1)); then
				mapfile -t COMPREPLY < <(compgen -c -- "$cur")
			else
				_govex_files "$cur"
			fi
			return 0
		fi
	done
	if [[ $cmd == policy ]]; then
		if ((cword == 2)); then
			_govex_words "$cur" "$govex" __complete values policy
		elif ((cword == 3)) && [[ $prev == show ]]; then
			_govex_words "$cur" "$govex" __complete values preset
		elif ((cword == 3)); then
			_govex_files "$cur"
		fi
		return 0
	fi
	local opts name k kind= names=()
	opts=$("$govex" __complete options "$cmd" 2>/dev/null) || return 0
	# the word before: an option whose value this is?
	while read -r name k; do
		names+=("$name")
		[[ $name == "$prev" ]] && kind=$k
	done <<<"$opts"
	case $kind in
	file) _govex_files "$cur"; return 0 ;;
	dir) _govex_files "$cur" -d; return 0 ;;
	preset | backend) _govex_words "$cur" "$govex" __complete values "$kind"; return 0 ;;
	text) return 0 ;;
	esac
	if [[ $cur == -* ]]; then
		_govex_words "$cur" printf '%s\n' "${names[@]}"
		return 0
	fi
	case $cmd in
	call | plan)
		if [[ $word == *.py:* || $word == *.ipynb:* ]]; then
			_govex_functions "$govex" "$word"
		elif [[ $cmd == call ]]; then
			_govex_sources "$cur"
		else
			_govex_files "$cur"
		fi
		;;
	*) _govex_files "$cur" ;;
	esac
	return 0
}
complete -F _govex govex
