//! Each op's dispatch, beside its WGSL: the parameters (`params!`, which also gives the
//! shader its `P`), the buffers it binds, and its grid.

/// A kernel's parameters, written once: the `#[repr(C)]` struct its dispatch pushes as
/// immediates, and its `FIELDS`, from which kernels.rs writes the module's WGSL `struct P`
/// and `var<immediate> p: P` (`wgsl`), so that no shader declares them. A field is a u32 or
/// an f32 (spelled alike in Rust and WGSL), or other parameters, whose fields WGSL lists in
/// their place.
macro_rules! params {
    ($(#[$attr:meta])* $vis:vis struct $name:ident { $($(#[$fattr:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$attr])*
        #[repr(C)]
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        $vis struct $name {
            $($(#[$fattr])* $field: $ty,)*
        }

        impl $name {
            /// The fields in order, as the shader's `P` lists them.
            pub const FIELDS: &'static [$crate::ops::Field] =
                &[$($crate::ops::Field { name: stringify!($field), ty: <$ty as $crate::ops::Wgsl>::TY }),*];
        }

        impl $crate::ops::Wgsl for $name {
            const TY: $crate::ops::Ty = $crate::ops::Ty::Flat(Self::FIELDS);
        }
    };
}

pub mod attend;
pub mod copy;
pub mod embed;
pub mod exit;
pub mod matmul;
pub mod mix;
pub mod o1;
pub mod prep;
pub mod residual;
pub mod swiglu;

/// The most workgroups along one axis of a grid (WebGPU's minimum, which every adapter
/// gives): rows beyond it go into further dispatches.
pub const MAX_GROUPS: usize = 65535;

/// Calls `f(row0, rows)` over `rows` in batches a grid axis can hold.
pub fn row_batches(rows: usize, mut f: impl FnMut(u32, u32)) {
    let mut row0 = 0;
    while row0 < rows {
        let n = MAX_GROUPS.min(rows - row0);
        f(row0 as u32, n as u32);
        row0 += n;
    }
}

/// A field of a kernel's parameters (`params!`).
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
}

/// What a field is in WGSL: a scalar type, or the fields of nested parameters.
#[derive(Debug)]
pub enum Ty {
    Scalar(&'static str),
    Flat(&'static [Field]),
}

/// A type a field of parameters can have.
pub trait Wgsl {
    const TY: Ty;
}

impl Wgsl for u32 {
    const TY: Ty = Ty::Scalar("u32");
}

impl Wgsl for f32 {
    const TY: Ty = Ty::Scalar("f32");
}

/// The WGSL of parameters `fields`: `struct P` and the immediates `p` a module reads.
pub fn wgsl(fields: &[Field]) -> String {
    fn put(fields: &[Field], text: &mut String) {
        for f in fields {
            match f.ty {
                Ty::Scalar(ty) => text.push_str(&format!("    {}: {ty},\n", f.name)),
                Ty::Flat(inner) => put(inner, text),
            }
        }
    }
    let mut text = String::from("struct P {\n");
    put(fields, &mut text);
    text.push_str("}\nvar<immediate> p: P;\n");
    text
}
