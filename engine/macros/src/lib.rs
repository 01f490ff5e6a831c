//! `#[derive(State)]`: declares a palgraph graph state next to its fields.
//!
//! Each field names its reducer and its lifetime in one attribute, and the derive writes
//! the matching partial-update struct and the `palgraph::State` impl:
//!
//! ```ignore
//! #[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize, palgraph::State)]
//! pub struct ChatState {
//!     #[state(reducer = palgraph::AddMessages)]
//!     pub messages: Vec<palgraph::Message>,
//!     #[state(reducer = palgraph::MergeMap)]
//!     pub docs: std::collections::BTreeMap<String, String>,
//!     #[state(transient)]
//!     pub action: Option<String>,
//!     #[state(transient, reducer = palgraph::Append)]
//!     pub citations: Vec<String>,
//!     #[state(reduce_with = keep_max)]
//!     pub best: u32,
//! }
//! ```
//!
//! generates `ChatStateUpdate` with one `Option<_>` per field and a builder setter per
//! field (`ChatStateUpdate::default().action(Some("audit".into()))`).

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields, Ident, LitStr, Path, Type};

/// Derives `palgraph::State` and generates the `<Name>Update` partial-update struct.
///
/// Field attributes (all optional, inside `#[state(...)]`):
/// - `reducer = Path`: a type implementing `palgraph::Reducer<FieldType>`
///   (`palgraph::Overwrite` when absent);
/// - `reduce_with = path::to::fn`: a custom `fn(&mut T, T)` reducer; the update is a `T`;
/// - `transient`: reset to its default at the start of every new turn (default: persistent);
/// - `default = path::to::fn`: the declared default (a `fn() -> T`), used by `Default` resets
///   of transient fields; `T::default()` when absent.
///
/// Container attribute: `#[state(update = Name)]` renames the generated update struct.
#[proc_macro_derive(State, attributes(state))]
pub fn derive_state(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

enum ReducerSpec {
    Type(Path),
    Fn(Path),
}

struct FieldSpec {
    ident: Ident,
    ty: Type,
    reducer: ReducerSpec,
    transient: bool,
    default_fn: Option<Path>,
    doc: String,
}

/// The text of the `///` comments among `attrs`.
fn doc_of(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                lines.push(s.value());
            }
        }
    }
    lines.join("\n")
}

fn expand(input: DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let vis = &input.vis;
    let mut update_name = format_ident!("{}Update", name);
    for attr in &input.attrs {
        if !attr.path().is_ident("state") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("update") {
                let value: Ident = meta.value()?.parse()?;
                update_name = value;
                Ok(())
            } else {
                Err(meta.error("unknown container attribute; expected `update = Name`"))
            }
        })?;
    }
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "State cannot be derived for generic structs",
        ));
    }
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(n) => &n.named,
            _ => {
                return Err(syn::Error::new_spanned(
                    name,
                    "State needs a struct with named fields",
                ))
            }
        },
        _ => return Err(syn::Error::new_spanned(name, "State needs a struct")),
    };
    if fields.len() > 64 {
        return Err(syn::Error::new_spanned(
            name,
            "a State has at most 64 fields",
        ));
    }

    let mut specs = Vec::new();
    for f in fields {
        let ident = f
            .ident
            .clone()
            .ok_or_else(|| syn::Error::new_spanned(f, "unnamed field"))?;
        let mut reducer = None;
        let mut transient = false;
        let mut default_fn = None;
        for attr in &f.attrs {
            if !attr.path().is_ident("state") {
                continue;
            }
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("transient") {
                    transient = true;
                    Ok(())
                } else if meta.path.is_ident("persistent") {
                    transient = false;
                    Ok(())
                } else if meta.path.is_ident("reducer") {
                    let p: Path = parse_path_or_str(meta.value()?)?;
                    reducer = Some(ReducerSpec::Type(p));
                    Ok(())
                } else if meta.path.is_ident("reduce_with") {
                    let p: Path = parse_path_or_str(meta.value()?)?;
                    reducer = Some(ReducerSpec::Fn(p));
                    Ok(())
                } else if meta.path.is_ident("default") {
                    let p: Path = parse_path_or_str(meta.value()?)?;
                    default_fn = Some(p);
                    Ok(())
                } else {
                    Err(meta.error(
                        "unknown field attribute; expected one of `reducer = Type`, `reduce_with = fn`, `transient`, `persistent`, `default = fn`",
                    ))
                }
            })?;
        }
        let reducer =
            reducer.unwrap_or_else(|| ReducerSpec::Type(syn::parse_quote!(::palgraph::Overwrite)));
        specs.push(FieldSpec {
            ident,
            ty: f.ty.clone(),
            reducer,
            transient,
            default_fn,
            doc: doc_of(&f.attrs),
        });
    }

    let pg = quote!(::palgraph);
    let private = quote!(::palgraph::__private);

    // Update struct fields.
    let update_fields = specs.iter().map(|s| {
        let ident = &s.ident;
        let ut = update_type(s);
        let doc = format!("Update of `{ident}` (applied with its reducer); `None` leaves it alone.");
        quote! {
            #[doc = #doc]
            #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "::palgraph::__private::present")]
            pub #ident: ::core::option::Option<#ut>,
        }
    });
    let setters = specs.iter().map(|s| {
        let ident = &s.ident;
        let ut = update_type(s);
        let doc = format!("Sets the update of `{ident}`.");
        quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #ident(mut self, value: #ut) -> Self {
                self.#ident = ::core::option::Option::Some(value);
                self
            }
        }
    });

    let field_infos = specs.iter().map(|s| {
        let fname = s.ident.to_string();
        let lifetime = if s.transient {
            quote!(#pg::Lifetime::Transient)
        } else {
            quote!(#pg::Lifetime::Persistent)
        };
        let (rname, delta, acc) = match &s.reducer {
            ReducerSpec::Type(p) => {
                let ty = &s.ty;
                (
                    quote!(<#p as #pg::Reducer<#ty>>::NAME),
                    quote!(<#p as #pg::Reducer<#ty>>::DELTA),
                    quote!(<#p as #pg::Reducer<#ty>>::ACCUMULATES),
                )
            }
            ReducerSpec::Fn(p) => {
                let n = quote!(#p).to_string().replace(' ', "");
                (quote!(#n), quote!(false), quote!(true))
            }
        };
        quote! {
            #pg::FieldInfo { name: #fname, lifetime: #lifetime, reducer: #rname, delta: #delta, accumulates: #acc }
        }
    });

    let idx: Vec<usize> = (0..specs.len()).collect();
    let written_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        quote! { if self.#ident.is_some() { set.insert(#i); } }
    });
    let update_json_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        quote! { #i => self.#ident.as_ref().map(|v| #private::serde_json::to_string(v)), }
    });
    let update_raw_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        quote! { #i => self.#ident.as_ref().map(|v| #private::serde_json::value::to_raw_value(v)), }
    });
    let normalize_arms = specs.iter().map(|s| {
        let ident = &s.ident;
        match &s.reducer {
            ReducerSpec::Type(p) => {
                let ty = &s.ty;
                quote! { if let ::core::option::Option::Some(v) = self.#ident.as_mut() { <#p as #pg::Reducer<#ty>>::normalize(v); } }
            }
            ReducerSpec::Fn(_) => quote! {},
        }
    });
    let apply_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        let call = reduce_call(s, quote!(&mut self.#ident), quote!(v));
        let fname = s.ident.to_string();
        quote! {
            if let ::core::option::Option::Some(v) = update.#ident {
                #call.map_err(|e| e.in_field(#fname))?;
                set.insert(#i);
            }
        }
    });
    let reset_arms = specs
        .iter()
        .zip(&idx)
        .filter(|(s, _)| s.transient)
        .map(|(s, i)| {
            let ident = &s.ident;
            let def = match &s.default_fn {
                Some(p) => quote!(#p()),
                None => quote!(::core::default::Default::default()),
            };
            quote! { #i => { self.#ident = #def; } }
        });
    let default_json_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ty = &s.ty;
        let def = match &s.default_fn {
            Some(p) => quote!(#p()),
            None => quote!(<#ty as ::core::default::Default>::default()),
        };
        quote! { #i => #private::serde_json::to_string(&#def), }
    });
    let to_json_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        quote! { #i => #private::serde_json::to_string(&self.#ident), }
    });
    let to_raw_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        quote! { #i => #private::serde_json::value::to_raw_value(&self.#ident), }
    });
    let from_json_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        quote! { #i => { self.#ident = #private::serde_json::from_str(json)?; } }
    });
    let delta_arms = specs.iter().zip(&idx).map(|(s, i)| {
        let ident = &s.ident;
        let ty = &s.ty;
        let ut = update_type(s);
        let fname = s.ident.to_string();
        let decode = quote! {
            let mut updates: ::std::vec::Vec<#ut> = ::std::vec::Vec::with_capacity(parts.len());
            for json in parts {
                updates.push(#private::serde_json::from_str(json).map_err(#pg::StateError::Decode)?);
            }
        };
        match &s.reducer {
            ReducerSpec::Type(p) => quote! {
                #i => {
                    #decode
                    <#p as #pg::Reducer<#ty>>::reduce_batch(&mut self.#ident, updates)
                        .map_err(|e| #pg::StateError::Reduce(e.in_field(#fname)))?;
                }
            },
            ReducerSpec::Fn(p) => quote! {
                #i => {
                    #decode
                    for v in updates {
                        #p(&mut self.#ident, v);
                    }
                }
            },
        }
    });

    let struct_doc = doc_of(&input.attrs);
    let name_str = name.to_string();
    let schema_fn = |update: bool| {
        let docs = specs.iter().zip(&idx).map(|(s, i)| {
            let ty = if update { update_type(s) } else { let t = &s.ty; quote!(#t) };
            let doc = &s.doc;
            quote! {
                #private::schema_probe::FieldDoc {
                    info: <Self as #pg::State>::FIELDS[#i],
                    doc: #doc,
                    schema: (&&#private::schema_probe::Probe::<#ty>::new()).field_schema(&mut collector),
                }
            }
        });
        quote! {
            #[allow(unused_imports)]
            use #private::schema_probe::{ViaAny as _, ViaJsonSchema as _};
            let mut collector = #private::schema_probe::Collector::default();
            let fields = ::std::vec![#(#docs),*];
            let defs = collector.definitions();
            #private::schema_probe::object_schema(#name_str, #struct_doc, fields, defs, #update)
        }
    };
    let state_schema = schema_fn(false);
    let update_schema = schema_fn(true);

    let update_doc =
        format!("A partial update of [`{name}`]: each field present is applied with its reducer.");
    let n_fields = specs.len();

    Ok(quote! {
        #[doc = #update_doc]
        #[derive(::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default, #private::serde::Serialize, #private::serde::Deserialize)]
        #[serde(crate = "::palgraph::__private::serde", deny_unknown_fields)]
        #vis struct #update_name {
            #(#update_fields)*
        }

        impl #update_name {
            #(#setters)*
        }

        impl ::core::convert::From<#update_name> for #pg::Command<#name> {
            fn from(update: #update_name) -> Self {
                #pg::Command::with_update(update)
            }
        }

        impl #pg::StateUpdate for #update_name {
            fn written(&self) -> #pg::FieldSet {
                let mut set = #pg::FieldSet::EMPTY;
                #(#written_arms)*
                set
            }
            fn field_json(&self, idx: usize) -> ::core::option::Option<::core::result::Result<::std::string::String, #private::serde_json::Error>> {
                match idx {
                    #(#update_json_arms)*
                    _ => ::core::option::Option::None,
                }
            }
            fn field_raw(&self, idx: usize) -> ::core::option::Option<::core::result::Result<::std::boxed::Box<#private::serde_json::value::RawValue>, #private::serde_json::Error>> {
                match idx {
                    #(#update_raw_arms)*
                    _ => ::core::option::Option::None,
                }
            }
            fn normalize(&mut self) {
                #(#normalize_arms)*
            }
        }

        impl #pg::State for #name {
            type Update = #update_name;
            const FIELDS: &'static [#pg::FieldInfo] = &[#(#field_infos),*];

            fn apply(&mut self, update: Self::Update) -> ::core::result::Result<#pg::FieldSet, #pg::ReduceError> {
                let mut set = #pg::FieldSet::EMPTY;
                #(#apply_arms)*
                ::core::result::Result::Ok(set)
            }
            fn json_schema() -> #private::serde_json::Value {
                #state_schema
            }
            fn update_json_schema() -> #private::serde_json::Value {
                #update_schema
            }
            fn reset_field(&mut self, idx: usize) {
                match idx {
                    #(#reset_arms)*
                    _ => {}
                }
            }
            fn default_field_json(idx: usize) -> ::core::result::Result<::std::string::String, #private::serde_json::Error> {
                match idx {
                    #(#default_json_arms)*
                    _ => ::core::result::Result::Ok(::std::string::String::from("null")),
                }
            }
            fn field_json(&self, idx: usize) -> ::core::result::Result<::std::string::String, #private::serde_json::Error> {
                match idx {
                    #(#to_json_arms)*
                    _ => ::core::result::Result::Ok(::std::string::String::from("null")),
                }
            }
            fn field_raw(&self, idx: usize) -> ::core::result::Result<::std::boxed::Box<#private::serde_json::value::RawValue>, #private::serde_json::Error> {
                match idx {
                    #(#to_raw_arms)*
                    _ => #private::serde_json::value::to_raw_value(&()),
                }
            }
            fn set_field_json(&mut self, idx: usize, json: &str) -> ::core::result::Result<(), #pg::StateError> {
                match idx {
                    #(#from_json_arms)*
                    _ => return ::core::result::Result::Err(#pg::StateError::UnknownField(idx)),
                }
                ::core::result::Result::Ok(())
            }
            fn apply_deltas_json(&mut self, idx: usize, parts: &[&str]) -> ::core::result::Result<(), #pg::StateError> {
                match idx {
                    #(#delta_arms)*
                    _ => return ::core::result::Result::Err(#pg::StateError::UnknownField(idx)),
                }
                ::core::result::Result::Ok(())
            }
        }

        const _: () = assert!(#n_fields <= 64);
    })
}

fn update_type(s: &FieldSpec) -> TokenStream2 {
    let ty = &s.ty;
    match &s.reducer {
        ReducerSpec::Type(p) => quote!(<#p as ::palgraph::Reducer<#ty>>::Update),
        ReducerSpec::Fn(_) => quote!(#ty),
    }
}

fn reduce_call(s: &FieldSpec, target: TokenStream2, value: TokenStream2) -> TokenStream2 {
    let ty = &s.ty;
    match &s.reducer {
        ReducerSpec::Type(p) => quote!(<#p as ::palgraph::Reducer<#ty>>::reduce(#target, #value)),
        ReducerSpec::Fn(p) => {
            quote!({ #p(#target, #value); ::core::result::Result::<(), ::palgraph::ReduceError>::Ok(()) })
        }
    }
}

fn parse_path_or_str(input: syn::parse::ParseStream<'_>) -> syn::Result<Path> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        lit.parse()
    } else {
        let expr: Expr = input.parse()?;
        match expr {
            Expr::Path(p) => Ok(p.path),
            other => Err(syn::Error::new_spanned(other, "expected a path")),
        }
    }
}
